"""``/api/jobs/{id}/summary`` and ``/ask``: a recording's summary and questions (SPEC §27).

A job is reached as by every job route first (``reachable_job``: no token
is a 401, another's job a 404); then both need ``[llm]``: without it they
answer 404 ``llm_unavailable``.
A summary is a unit of work (ADR 83): asking queues it (202), reading it
shows its state. A question is answered in the request, from the
transcript only; its quotes are transcript lines with their real times.
"""

from __future__ import annotations

import logging
import math
from datetime import datetime

import attrs
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from transcriber_app.web.api.handlers import job_not_found, reachable_job, unavailable
from transcriber_app.web.errors import ApiError
from transcriber_app.web.schemas import doc, to_json
from transcriber_app.web.state import runtime_of
from transcriber_app.web.streams import read_json_object
from transcriber_core import summary_steps
from transcriber_core.budgets import burst_of
from transcriber_core.entities import Job, State
from transcriber_core.errors import (
    JobNotFound,
    ModelRefused,
    ModelUnavailable,
    TranscriberError,
)
from transcriber_core.policy import ASK_CAPACITY, ASK_PER, ask_pace
from transcriber_core.ports import LanguageModel, SummaryStore
from transcriber_core.services import Services
from transcriber_core.summaries import MAX_QUESTION_CHARS, Summary, SummaryState

log = logging.getLogger("transcriber.http")

#: The largest ``/ask`` body read: a question of ``MAX_QUESTION_CHARS`` in any script fits.
MAX_ASK_BODY_BYTES = 8 * 1024
#: Seconds a caller is told to wait after the model's server did not answer.
RETRY_AFTER_SECONDS = 30
#: The code of a question over the owner's pace (ADR 94).
TOO_MANY_QUESTIONS = "too_many_questions"


@attrs.frozen(kw_only=True)
class ActionBody:
    """An action item: what is to be done, and by whom when the speakers said."""

    text: str
    who: str | None = attrs.field(default=None, metadata=doc("a speaker's name; absent: nobody"))


@attrs.frozen(kw_only=True)
class SummaryBody:
    """A recording's summary: pending while queued or being built, then done or failed."""

    state: SummaryState
    text: str | None = attrs.field(default=None, metadata=doc("a short paragraph, once done"))
    points: tuple[str, ...] = attrs.field(metadata=doc("the key points, once done"))
    actions: tuple[ActionBody, ...] = attrs.field(metadata=doc("the action items, once done"))
    model: str | None = attrs.field(default=None, metadata=doc("the model that built it"))
    created: datetime | None = attrs.field(default=None, metadata=doc("when it was built"))
    error: str | None = attrs.field(
        default=None, metadata=doc("why it failed, or why its last attempt did not finish")
    )
    stale: bool = attrs.field(
        metadata=doc("the transcript changed since it was built: ask again to rebuild it")
    )

    @classmethod
    def of(cls, summary: Summary, job: Job) -> SummaryBody:
        """The answer's view of ``summary`` of ``job`` as it reads now."""
        summary = summary_steps.as_seen(summary, job)
        return cls(
            state=summary.state,
            text=summary.text,
            points=summary.points,
            actions=tuple(ActionBody(text=a.text, who=a.who) for a in summary.actions),
            model=summary.model,
            created=summary.created,
            error=summary.error,
            stale=summary_steps.is_stale(summary, job),
        )


@attrs.frozen(kw_only=True)
class QuoteBody:
    """A moment an answer rests on: a transcript line's own times (seconds) and words."""

    start: float
    end: float
    text: str


@attrs.frozen(kw_only=True)
class AskAnswer:
    """The answer to a question, from the transcript only, with the moments it rests on."""

    answer: str
    quotes: tuple[QuoteBody, ...]


def llm_unavailable() -> ApiError:
    """The 404 of these routes without ``[llm]``."""
    return ApiError(404, "llm_unavailable", "no language model is configured here")


def _llm(request: Request) -> tuple[Services, LanguageModel, SummaryStore]:
    services = runtime_of(request).services
    if services.language_model is None or services.summaries is None:
        raise llm_unavailable()
    return services, services.language_model, services.summaries


def _done(job: Job) -> None:
    if job.state is not State.DONE:
        raise ApiError(409, "not_done", "the recording is not transcribed yet")


async def request_summary(request: Request) -> Response:
    """``POST /api/jobs/{id}/summary``: queue (again) the done recording's summary (202)."""
    return await queue_summary(request, await reachable_job(request))


async def queue_summary(request: Request, job: Job) -> Response:
    """Queue (again) the summary of ``job``, reached by the caller: the answer of both doors."""
    services, _, _ = _llm(request)
    _done(job)
    try:
        summary = await summary_steps.request(services, job.id)
    except JobNotFound:
        raise job_not_found() from None
    except TranscriberError as exc:
        log.warning("summary.request_error", extra={"error_type": type(exc).__name__})
        raise unavailable() from None
    return JSONResponse(to_json(SummaryBody.of(summary, job)), status_code=202)


async def get_summary(request: Request) -> Response:
    """``GET /api/jobs/{id}/summary``: the recording's summary and its state."""
    return await read_summary(request, await reachable_job(request))


async def read_summary(request: Request, job: Job) -> Response:
    """The summary of ``job``, reached by the caller, and its state: the answer of both doors."""
    _, _, store = _llm(request)
    try:
        summary = await store.get_summary(job.id)
    except TranscriberError as exc:
        log.warning("summary.read_error", extra={"error_type": type(exc).__name__})
        raise unavailable() from None
    if summary is None:
        raise ApiError(404, "summary_not_found", "no summary was asked for this recording")
    return JSONResponse(to_json(SummaryBody.of(summary, job)))


async def _paced(request: Request, job: Job) -> None:
    """Take one of the owner's questions (ADR 94); 429 ``too_many_questions`` when none is left.

    The budget is in the database, so every API process of the service
    counts against the same one.
    """
    budgets = runtime_of(request).budgets
    if budgets is None:
        return
    try:
        wait = await budgets.take(ask_pace(job.owner), capacity=ASK_CAPACITY, per=ASK_PER)
    except TranscriberError as exc:
        log.warning("ask.budget_error", extra={"error_type": type(exc).__name__})
        raise unavailable() from None
    if wait is None:
        return
    seconds = max(math.ceil(wait.total_seconds()), 1)
    burst = burst_of(ASK_CAPACITY)
    every = round(ASK_PER.total_seconds() / (ASK_CAPACITY - burst))
    raise ApiError(
        429,
        TOO_MANY_QUESTIONS,
        f"at most {burst} questions at once, then one every {every} s; ask again in {seconds} s",
        headers={"Retry-After": str(seconds)},
    )


async def ask(request: Request) -> Response:
    """``POST /api/jobs/{id}/ask``: ``{"question"}`` answered from the transcript only."""
    return await answer(request, await reachable_job(request))


async def answer(request: Request, job: Job) -> Response:
    """The question of the body on ``job``, reached by the caller: the answer of both doors."""
    _, model, _ = _llm(request)
    body = await read_json_object(
        request,
        max_bytes=MAX_ASK_BODY_BYTES,
        code="bad_question",
        example=': {"question": "What was decided?"}',
    )
    question = body.get("question")
    if not isinstance(question, str) or not question.strip():
        raise ApiError(400, "bad_question", 'the body must be {"question": "..."}')
    if len(question) > MAX_QUESTION_CHARS:
        raise ApiError(
            400, "bad_question", f"a question is at most {MAX_QUESTION_CHARS} characters"
        )
    _done(job)
    await _paced(request, job)
    try:
        answer = await summary_steps.ask(model, job, question.strip())
    except ModelRefused as exc:
        raise ApiError(502, "model_refused", exc.message) from None
    except ModelUnavailable as exc:
        raise ApiError(
            503,
            "model_unavailable",
            exc.message,
            headers={"Retry-After": str(RETRY_AFTER_SECONDS)},
        ) from None
    quotes = tuple(QuoteBody(start=q.start, end=q.end, text=q.text) for q in answer.quotes)
    return JSONResponse(to_json(AskAnswer(answer=answer.answer, quotes=quotes)))
