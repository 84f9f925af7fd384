"""Building summaries as units of work, and answering questions (SPEC §27, ADR 83).

A summary is leased like a part (ADR 52): ``acquire_summary`` in one
statement, the lease renewed while the model works, every write fenced by
``save_summary_if_held``. The job's own retry policy applies to the
summary's attempts: a ``ModelUnavailable`` (429, 5xx, a timeout, a
malformed answer) pauses it for ``retry_pause``, a ``ModelRefused`` fails
it with its reason, spent attempts fail it. Whatever happens to it, its
recording stays ``done``: nothing here writes a job.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Sequence
from datetime import timedelta

import attrs

from transcriber_core import outbox, summaries
from transcriber_core.deletion import shielded
from transcriber_core.entities import Job, NewDelivery, State
from transcriber_core.errors import (
    JobNotFound,
    LeaseLost,
    ModelUnavailable,
    PermanentError,
    TransientError,
)
from transcriber_core.leases import bounded, renewed
from transcriber_core.naming import held_by
from transcriber_core.policy import is_exhausted, retry_pause
from transcriber_core.ports import LanguageModel
from transcriber_core.services import Services
from transcriber_core.summaries import (
    Answer,
    Built,
    Line,
    Message,
    Summary,
    SummaryState,
)
from transcriber_core.wakeup import OUTBOX, SUMMARIES

log = logging.getLogger("transcriber.summaries")


@attrs.frozen
class SummaryLease:
    """A summary this worker holds, and the acquisition id that proves it."""

    summary: Summary
    acquisition_id: str


async def request(services: Services, job_id: str) -> Summary:
    """Ask for the job's summary (again) and wake the summary loops; ``JobNotFound`` if gone.

    A summary still pending is left as it is (asked twice, built once); a
    done, stale or failed one is rebuilt from scratch.
    """
    if services.summaries is None:
        raise RuntimeError("no [llm]: summaries are off")
    found = await services.summaries.get_summary(job_id)
    if found is not None and found.state is SummaryState.PENDING:
        return found
    summary = await services.summaries.request_summary(job_id)
    services.wakeup.notify(SUMMARIES)
    return summary


def as_seen(summary: Summary, job: Job) -> Summary:
    """The summary as its recording allows: one waiting on a recording that failed has failed."""
    if (
        summary.state is SummaryState.PENDING
        and job.state.is_terminal
        and job.state is not State.DONE
    ):
        return attrs.evolve(
            summary, state=SummaryState.FAILED, error="the recording was not transcribed"
        )
    return summary


def is_stale(summary: Summary, job: Job) -> bool:
    """True when the transcript changed (a correction, a renamed speaker) since it was built."""
    if summary.state is not SummaryState.DONE or summary.source is None:
        return False
    return summary.source != summaries.source_digest(summaries.lines_of(job))


async def acquire_next_summary(services: Services) -> SummaryLease | None:
    """Lease the next pending summary; one past the attempt limit fails on the way."""
    store = services.summaries
    if store is None:
        return None
    settings = services.settings
    while True:
        acquisition_id = held_by(services.worker or services.host, services.ids.new_id())
        summary = await store.acquire_summary(acquisition_id=acquisition_id, lease=settings.lease)
        if summary is None:
            return None
        if not is_exhausted(summary.attempts, settings):
            return SummaryLease(summary, acquisition_id)
        reason = f"gave up after {settings.max_attempts} attempts"
        if summary.error:
            reason = f"{reason}; last error: {summary.error}"
        log.warning("summary.dead", extra={"job_id": summary.job_id, "attempts": summary.attempts})
        gave_up = attrs.evolve(
            summary, state=SummaryState.FAILED, error=reason, acquisition_id=None
        )
        deliveries = await _deliveries(services, gave_up)
        with contextlib.suppress(LeaseLost):
            await shielded(
                store.save_summary_if_held(
                    gave_up, acquisition_id=acquisition_id, deliveries=deliveries
                )
            )
            _deliveries_written(services, deliveries)


async def process_summary(services: Services, lease: SummaryLease) -> Summary | None:
    """Build a leased summary under its renewed lease and save it; None when the lease was lost."""
    store, model = services.summaries, services.language_model
    if store is None or model is None:
        return None
    summary = lease.summary
    extra = {"job_id": summary.job_id, "attempts": summary.attempts}
    log.info("summary.start", extra=extra)
    delay: timedelta | None = None
    try:
        result = await _run_leased(services, lease)
    except LeaseLost:
        log.warning("summary.lease_lost", extra=extra)
        return None
    except JobNotFound:
        # Deleted with its recording meanwhile: there is nothing left to save it to.
        return None
    except PermanentError as exc:
        log.warning("summary.failed", extra={**extra, "error_type": type(exc).__name__})
        result = attrs.evolve(summary, state=SummaryState.FAILED, error=exc.message)
    except TransientError as exc:
        delay = retry_pause(summary.attempts, services.settings)
        result = attrs.evolve(summary, error=exc.message)
        log.warning("summary.retry", extra={**extra, "error_type": type(exc).__name__})
    except Exception as exc:  # noqa: BLE001 - a summary must never take its worker down
        delay = retry_pause(summary.attempts, services.settings)
        result = attrs.evolve(summary, error="unexpected error while summarising")
        log.warning("summary.retry", extra={**extra, "error_type": type(exc).__name__})
    released = attrs.evolve(result, acquisition_id=None)
    deliveries = await _deliveries(services, released)
    try:
        await shielded(
            store.save_summary_if_held(
                released, acquisition_id=lease.acquisition_id, delay=delay, deliveries=deliveries
            )
        )
    except LeaseLost:
        log.warning("summary.save_lease_lost", extra=extra)
        return None
    _deliveries_written(services, deliveries)
    if released.state is SummaryState.DONE:
        log.info("summary.done", extra=extra)
        services.wakeup.job_changed(summary.job_id)
    return released


async def _deliveries(services: Services, summary: Summary) -> tuple[NewDelivery, ...]:
    """What saving ``summary`` writes to the outbox: its chat's notice once it is done or failed."""
    if summary.state not in outbox.SENT_SUMMARIES:
        return ()
    try:
        job = await services.jobs.get(summary.job_id)
    except JobNotFound:
        return ()  # deleted meanwhile: its save finds no summary either
    return outbox.summary_deliveries(job)


def _deliveries_written(services: Services, deliveries: Sequence[NewDelivery]) -> None:
    """The save wrote ``deliveries`` (ADR 92): a delivery loop here sends them now."""
    if deliveries:
        services.wakeup.notify(OUTBOX)


async def _run_leased(services: Services, lease: SummaryLease) -> Summary:
    """Build the summary, renewing its lease; a lost lease cancels it and raises ``LeaseLost``."""
    store = services.summaries
    assert store is not None  # noqa: S101 - checked by the caller
    summary = lease.summary
    return await renewed(
        bounded(
            _build(services, summary),
            services.settings.summary_ceiling,
            past="building the summary ran past its ceiling",
        ),
        lambda: store.renew_summary(summary.job_id, acquisition_id=lease.acquisition_id),
        every=services.settings.lease_renewal,
        job_id=summary.job_id,
    )


async def _build(services: Services, summary: Summary) -> Summary:
    """The summary of its job's transcript as it reads now: done, with its model and source."""
    model = services.language_model
    assert model is not None  # noqa: S101 - checked by the caller
    job = await services.jobs.get(summary.job_id)
    lines = summaries.lines_of(job)
    built = await summarise(model, lines, language=job.language)
    return attrs.evolve(
        summary,
        state=SummaryState.DONE,
        text=built.text,
        points=built.points,
        actions=built.actions,
        model=model.model,
        prompt_version=summaries.PROMPT_VERSION,
        source=summaries.source_digest(lines),
        error=None,
        created=services.clock.now(),
    )


def _budget(model: LanguageModel, overhead: Sequence[Message]) -> int:
    """Tokens left for transcript lines in one request beside ``overhead``'s messages."""
    return model.max_input_tokens - summaries.request_tokens(overhead)


async def summarise(model: LanguageModel, lines: Sequence[Line], *, language: str | None) -> Built:
    """The summary of ``lines``: in one request when they fit, else piece by piece, combined.

    No request is over ``model.max_input_tokens`` (by ``estimate_tokens``):
    pieces are cut to fit beside the prompt, and the pieces' summaries are
    combined in groups that fit, then those groups' summaries, and so on.
    """
    if not lines:
        return Built(text="")
    budget = _budget(model, summaries.summary_messages((), language=language))
    partials = [
        await _ask_summary(model, summaries.summary_messages(piece, language=language))
        for piece in summaries.pieces(lines, budget=budget)
    ]
    while len(partials) > 1:
        partials = [
            group[0]
            if len(group) == 1
            else await _ask_summary(model, summaries.combine_messages(group, language=language))
            for group in _groups(model, partials, language=language)
        ]
    return partials[0]


def _groups(
    model: LanguageModel, partials: Sequence[Built], *, language: str | None
) -> list[list[Built]]:
    """``partials`` in consecutive groups whose combining request fits the limit."""
    groups: list[list[Built]] = []
    for built in partials:
        trial = [*groups[-1], built] if groups else []
        fits = summaries.combine_messages(trial, language=language)
        if trial and summaries.request_tokens(fits) <= model.max_input_tokens:
            groups[-1].append(built)
        else:
            groups.append([built])
    if len(groups) == len(partials):
        # No two fit one request together: combining would never end.
        raise ModelUnavailable("the pieces' summaries do not fit one request together")
    return groups


async def _ask_summary(model: LanguageModel, messages: list[Message]) -> Built:
    _refuse_over_limit(model, messages)
    completion = await model.complete(messages, want_json=True)
    return summaries.parse_summary(completion.text)


def _refuse_over_limit(model: LanguageModel, messages: Sequence[Message]) -> None:
    if summaries.request_tokens(messages) > model.max_input_tokens:
        raise ModelUnavailable("a request to the language model would be over its input limit")


async def ask(model: LanguageModel, job: Job, question: str) -> Answer:
    """The answer to ``question`` from ``job``'s transcript only, with the lines it rests on.

    Quotes are the transcript's own lines with their real times: the model
    names line numbers, never times. A transcript over the limit is asked
    piece by piece, then the pieces' answers together.
    """
    lines = summaries.lines_of(job)
    if not lines:
        return Answer(answer="", quotes=())
    budget = _budget(model, summaries.ask_messages((), question))
    found: list[summaries.PieceAnswer] = []
    for piece in summaries.pieces(lines, budget=budget):
        messages = summaries.ask_messages(piece, question)
        _refuse_over_limit(model, messages)
        completion = await model.complete(messages, want_json=True)
        found.append(summaries.parse_answer(completion.text, known=[line.number for line in piece]))
    if len(found) == 1:
        text, numbers = found[0]
    else:
        cited = [n for _, numbers in found for n in numbers]
        messages = summaries.ask_combine_messages(found, question)
        _refuse_over_limit(model, messages)
        completion = await model.complete(messages, want_json=True)
        text, numbers = summaries.parse_answer(completion.text, known=cited)
        numbers = numbers or tuple(cited)
    return Answer(answer=text, quotes=summaries.quotes_of(numbers, lines))


async def summary_loop(services: Services, stopping: asyncio.Event) -> None:
    """Build due summaries one at a time until ``stopping``; wait for a wake-up or a tick when none.

    Summaries become due when their recording is done, in any process: the
    loop looks again every ``idle_poll_interval`` even without a wake-up.
    """
    idle = services.settings.idle_poll_interval.total_seconds()
    while not stopping.is_set():
        token = services.wakeup.token(SUMMARIES)
        try:
            lease = await acquire_next_summary(services)
        except Exception as exc:  # noqa: BLE001 - a broken database must not end the loop
            log.warning("acquire_summary.error", extra={"error_type": type(exc).__name__})
            lease = None
        if lease is None:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(idle):
                    await token.wait()
            continue
        try:
            await process_summary(services, lease)
        except Exception as exc:  # noqa: BLE001 - its lease expires and it is retried
            log.warning(
                "process_summary.error",
                extra={"job_id": lease.summary.job_id, "error_type": type(exc).__name__},
            )


def offered(services: Services) -> bool:
    """Whether this service summarises: a language model and a summary store (``[llm]``)."""
    return services.summaries is not None and services.language_model is not None


def wants_summary(services: Services, asked: bool | None) -> bool:
    """Whether a recording taken in gets a summary: as asked, else ``[llm] auto_summary``."""
    if not offered(services):
        return False
    return services.settings.auto_summary if asked is None else asked


__all__ = [
    "SummaryLease",
    "acquire_next_summary",
    "ask",
    "is_stale",
    "offered",
    "process_summary",
    "request",
    "summarise",
    "summary_loop",
    "wants_summary",
]
