"""The one way in (SPEC §28, ADR 74): every door's recording becomes a job here.

A door (``POST /api/audio``, the workspace's upload, ``/v1``, Telegram)
only parses its input and shapes its answer. ``take_in`` decides, in this
order, for every door::

    dedup key seen before? ── yes ─> the door's proof ─> the sender, asked again if read
        │ no                          ─> check_replay ─> the first job
    the sender (owner, payer) ─> today's quota (before any byte)
        ─> the door stages the bytes (or names a link) ─> language, prompt, task,
           speakers, callback, title ─> a link checked (``MediaFetcher.check``)
        ─> the sender, asked again (SPEC §29)
        ─> submit: the charge, the store, the job, the notice

A link (SPEC §28, ADR 85) becomes a job in ``fetch`` with nothing stored
yet: it is charged 0 seconds at intake (a spent day still refuses it) and
its measured length when it is converted (``convert``'s settle).

Its refusals are the core's errors (``QuotaExceeded``, ``DedupKeyReused``,
``OptionRefused``, ``CallbackRefused``, ``BadSpeakers``, a ``DiskFull`` or
other ``TranscriberError``); each door kind maps them to its answers in one
place. A later door (a link, the share target) is one more ``ports.Door``.
"""

from __future__ import annotations

import logging
from pathlib import Path

import attrs

from transcriber_core import summary_steps
from transcriber_core.entities import Event, Job, Origin, State
from transcriber_core.errors import (
    CallbackRefused,
    DedupKeyReused,
    FetchRefused,
    OptionRefused,
    PermanentError,
    QuotaExceeded,
    TranscriberError,
)
from transcriber_core.fetching import BAD_URL, NO_FETCHER, well_formed_link
from transcriber_core.languages import DEFAULT_REQUEST, RecognitionRequest, recognition_request
from transcriber_core.outbox import deliver_next, deliveries_for
from transcriber_core.policy import (
    QuotaDecision,
    charged_seconds,
    is_short,
    measure_bound,
    quota_decision,
)
from transcriber_core.ports import Door, Wishes
from transcriber_core.services import Services
from transcriber_core.speakers import BadSpeakers, labels_speakers, parse_wanted
from transcriber_core.titles import clean_title
from transcriber_core.usage import Charge
from transcriber_core.wakeup import OUTBOX

log = logging.getLogger("transcriber.intake")


@attrs.frozen(kw_only=True)
class Taken:
    """What ``take_in`` made of a recording."""

    job: Job
    #: False: the job is the first one of its dedup key (a retry, or a race lost in ``create``).
    is_new: bool


@attrs.frozen(kw_only=True)
class Judged:
    """``Wishes`` checked against this service: what the job is stored with."""

    request: RecognitionRequest = DEFAULT_REQUEST
    speakers: int | None = None
    callback_url: str | None = attrs.field(default=None, repr=False)
    #: The title, trimmed; None: none (ADR 79).
    title: str | None = attrs.field(default=None, repr=False)
    #: Summarise it once done: as asked, else ``[llm] auto_summary``; never without ``[llm]``.
    summary: bool = False


async def take_in(
    services: Services, door: Door, *, origin: Origin, dedup_key: str | None = None
) -> Taken:
    """Turn the recording behind ``door`` into a job, or the first job of ``dedup_key``.

    The rules, once for every door: a known key answers with its first job
    when the door's proof matches it (``check_replay``), and nothing is
    charged or stored; otherwise the sender's spent day refuses the
    recording before a byte of it is taken (``check_quota``), what was asked
    is judged (``judge``) once the door has staged it, the sender is asked
    again (``Door.sender_again``: an upload can run for hours), and
    ``submit`` charges the payer, stores and enqueues it. Raises the core's
    errors (module docstring) and whatever the door raises; nothing is left
    behind.
    """
    first = await first_job(services, dedup_key)
    if first is not None:
        proof = await door.proof(first)
        if proof.wishes is not None:
            await judge(services, proof.wishes)
        if proof.read:
            # A retry's body can take hours too: its sender is asked again (SPEC §29).
            await door.sender_again()
        check_replay(first, proof.digest)
        return Taken(job=first, is_new=False)
    sender = await door.sender()
    payer = sender.owner if sender.payer is None else sender.payer
    # A spent day is told before the bytes come in (ADR 59): nothing to receive, nothing to undo.
    await check_quota(services, payer)
    async with door.staged() as staged:
        judged = await judge(services, staged.wishes)
        if staged.url is not None:
            await check_link(services, staged.url)
        # Asked again once the bytes are in (SPEC §29); the day was judged by the first answer,
        # the charge is the payer's now.
        sender = await door.sender_again()
        payer = sender.owner if sender.payer is None else sender.payer
        job, is_new = await submit(
            services,
            staged.path,
            extension=staged.extension,
            origin=origin,
            dedup_key=dedup_key,
            digest=staged.digest,
            owner=sender.owner,
            callback_url=judged.callback_url,
            speakers_wanted=judged.speakers,
            request=judged.request,
            payer=payer,
            url=staged.url,
            title=judged.title,
        )
    if is_new and judged.summary:
        await _ask_summary(services, job)
    return Taken(job=job, is_new=is_new)


async def check_link(services: Services, url: str) -> None:
    """Refuse at once a link that can be refused without downloading it (SPEC §28).

    ``FetchRefused`` with its code (``url_not_allowed``, ``playlist_not_supported``,
    ``links_disabled`` when this service fetches no links), ``FetchUnavailable``
    when its host cannot be resolved now.
    """
    if not well_formed_link(url):
        raise FetchRefused(BAD_URL)
    if services.fetcher is None:
        raise FetchRefused(NO_FETCHER)
    await services.fetcher.check(url)


async def _ask_summary(services: Services, job: Job) -> None:
    """Queue the new job's summary; it waits for the job to be done (ADR 83).

    The job is already stored: a store that fails now costs the summary
    alone (logged), never the recording, which is asked for again later.
    """
    try:
        await summary_steps.request(services, job.id)
    except TranscriberError as exc:
        log.warning(
            "summary.request_error", extra={"job_id": job.id, "error_type": type(exc).__name__}
        )


async def judge(services: Services, wishes: Wishes) -> Judged:
    """``wishes`` checked against the recognizer, the diarizer and the webhook rules (SPEC §18).

    Raises ``OptionRefused`` (language, prompt, task: its code and field),
    ``BadSpeakers`` (not a ``speakers`` value, or speakers asked of a
    service that labels none), and
    ``CallbackRefused`` (``webhooks_disabled`` without ``[webhooks] secret``;
    else the sender's own check: not http(s), credentials, a refused address).
    """
    abilities = services.recognizer.abilities
    try:
        request = recognition_request(
            abilities, language=wishes.language, prompt=wishes.prompt, task=wishes.task
        )
    except OptionRefused as exc:
        if not (wishes.standing_language and exc.field == "language"):
            raise
        request = recognition_request(abilities, prompt=wishes.prompt, task=wishes.task)
    if wishes.callback_url is not None:
        if services.webhooks is None:
            raise CallbackRefused(
                "this service sends no webhooks ([webhooks] secret is unset); send no callback_url",
                code="webhooks_disabled",
            )
        await services.webhooks.check(wishes.callback_url)
    title = clean_title(wishes.title)
    wanted = None if wishes.speakers is None else parse_wanted(wishes.speakers)
    if wanted is not None and not labels_speakers(services):
        raise BadSpeakers("this service labels no speakers; send speakers=off")
    return Judged(
        request=request,
        speakers=wanted,
        callback_url=wishes.callback_url,
        title=title,
        summary=summary_steps.wants_summary(services, wishes.summary),
    )


async def submit(
    services: Services,
    source: Path | None,
    *,
    extension: str,
    origin: Origin,
    dedup_key: str | None = None,
    digest: str | None = None,
    owner: str | None = None,
    callback_url: str | None = None,
    speakers_wanted: int | None = None,
    request: RecognitionRequest = DEFAULT_REQUEST,
    payer: str | None = None,
    url: str | None = None,
    title: str | None = None,
) -> tuple[Job, bool]:
    """Move the recording at ``source`` into storage and enqueue a job for it.

    Or, with ``url`` and no ``source``, enqueue a job that fetches it first
    (``fetching``), charged 0 seconds until its length is measured (ADR 85).

    Returns the job and True, or, when ``dedup_key`` was seen before, the
    first job and False with nothing new stored. ``digest`` (the recording's
    SHA-256) is kept with the job; a key seen before with another digest
    raises ``DedupKeyReused`` (``check_replay``), also with nothing stored.
    ``owner`` is the hash of the API token that sent it (ADR 36), kept with the job.
    ``callback_url``, already checked, is called when the job ends (ADR 35).
    ``speakers_wanted`` (``speakers.parse_wanted``) asks for speaker labels (ADR 45).
    ``request`` (checked by ``languages.recognition_request``) goes to the recognizer.
    ``payer`` (default: ``owner``) is whose daily seconds the recording counts
    against (ADR 59), with the seconds it decodes to (``charge_length``,
    ADR 67); over ``seconds_per_day`` it raises ``QuotaExceeded`` with
    nothing stored, and the caller removes ``source``. Otherwise ``source``
    is gone either way. ``title`` (``titles.clean_title``) is stored with the job.
    """
    declared = None
    if source is not None and services.probe is not None:
        declared = await services.probe.declared_duration(source)
    payer = owner if payer is None else payer
    # The recording's id first, then the job's: the order ids have always been drawn in.
    file_id, job_id = services.ids.new_id(), services.ids.new_id()
    if payer is not None and services.usage is not None:
        limit = services.settings.seconds_per_day
        seconds, exact = 0.0, True
        if source is not None:
            seconds, exact = await charge_length(services, source, declared)
        charge = Charge(job_id=job_id, payer=payer, seconds=seconds)
        decision = await services.usage.charge(charge, limit=limit)
        if not decision.allowed:
            raise _refusal(decision, charge.seconds, exact=exact)
    try:
        stored, is_new = await _store(
            services,
            source,
            (file_id, job_id),
            declared,
            extension=extension,
            origin=origin,
            dedup_key=dedup_key,
            digest=digest,
            owner=owner,
            callback_url=callback_url,
            speakers_wanted=speakers_wanted,
            request=request,
            url=url,
            title=title,
        )
    except Exception:
        # Nothing was stored. A cancellation keeps the charge, as it keeps the bytes: the
        # insert may still commit after its caller went away.
        if payer is not None and services.usage is not None:
            await _uncharge(services, job_id)
        raise
    if not is_new and payer is not None and services.usage is not None:
        # A replay counts as its first job did, and no more.
        await _uncharge(services, job_id)
    return stored, is_new


async def charge_length(
    services: Services, source: Path, declared: float | None
) -> tuple[float, bool]:
    """What the recording at ``source`` is charged at intake, whatever its container.

    The seconds, and whether they are its length (False: a bound, told as
    ``QuotaExceeded.exact``). Under a quota the recording is decoded and
    counted (``services.meter``) up to just past the day's quota and within
    ``measure_ceiling``; what the count says is charged by
    ``policy.charged_seconds`` (ADR 67). A recording the converter will
    refuse is charged nothing: it is never transcribed. Without a quota
    (only usage is counted) or a meter, the header's declared length, set
    to the measured one at conversion.
    """
    limit = services.settings.seconds_per_day
    meter = services.meter
    if meter is None or limit == 0:
        return charged_seconds(None, declared=declared, limit=limit), True
    try:
        measured = await meter.measure(
            source, up_to=measure_bound(limit), within=services.settings.measure_ceiling
        )
    except PermanentError:
        return 0.0, True
    return charged_seconds(measured, declared=declared, limit=limit), measured.whole


async def check_quota(services: Services, payer: str | None) -> None:
    """Raise ``QuotaExceeded`` when ``payer``'s day is already spent, before any bytes come in.

    A read, not a charge: ``submit`` decides for good under the store's
    lock. This only spares a sender the upload of a recording that will be
    refused anyway.
    """
    limit = services.settings.seconds_per_day
    if payer is None or services.usage is None or limit == 0:
        return
    used = (await services.usage.usage([payer]))[payer]
    decision = quota_decision(now=services.clock.now(), used=used.today, incoming=0.0, limit=limit)
    if not decision.allowed:
        raise _refusal(decision, 0.0)


def _refusal(decision: QuotaDecision, incoming: float, *, exact: bool = True) -> QuotaExceeded:
    if decision.resets is None:  # pragma: no cover - only a quota refuses, and it resets
        raise AssertionError("a refusal without a quota")
    return QuotaExceeded(resets=decision.resets, left=decision.left, incoming=incoming, exact=exact)


async def _uncharge(services: Services, job_id: str) -> None:
    if services.usage is None:  # pragma: no cover - checked by the callers
        return
    try:
        await services.usage.uncharge(job_id)
    except Exception as exc:  # noqa: BLE001 - a charge left behind over-counts one recording
        log.warning("intake.uncharge_error", extra={"error_type": type(exc).__name__})


async def _store(
    services: Services,
    source: Path | None,
    ids: tuple[str, str],
    declared: float | None,
    *,
    extension: str,
    origin: Origin,
    dedup_key: str | None,
    digest: str | None,
    owner: str | None,
    callback_url: str | None,
    speakers_wanted: int | None,
    request: RecognitionRequest,
    url: str | None,
    title: str | None,
) -> tuple[Job, bool]:
    """``submit`` once the quota took the recording: the bytes, the job, the notice."""
    file_id, job_id = ids
    now = services.clock.now()
    record = None
    if source is not None:
        record = await services.files.put(file_id, extension, source, now=now, move=True)
    job = Job(
        id=job_id,
        # A link's bytes come in its own step, leased and retried (ADR 85).
        state=State.CONVERT if record is not None else State.FETCH,
        origin=origin,
        source_file_id=None if record is None else record.id,
        source_url=url,
        dedup_key=dedup_key,
        upload_digest=digest,
        owner=owner,
        short=record is not None and is_short(record.size, declared, services.settings),
        callback_url=callback_url,
        speakers_wanted=speakers_wanted,
        language_requested=request.language,
        prompt=request.prompt,
        task=request.task,
        title=title,
        # The store stamps both with its own clock (queue order, ADR 30).
        created=now,
        updated=now,
    )
    notices = deliveries_for(job, Event.ACCEPTED)
    records = [] if record is None else [record]
    try:
        stored, is_new = await services.jobs.create(job, records, notices)
    except Exception:
        if record is not None:
            await services.files.delete(record)
        raise
    # A cancellation keeps the bytes: the insert may still commit after its caller
    # went away, and a job must never point at a deleted recording (orphan bytes
    # are the lesser harm, ADR 5).
    if not is_new:
        if record is not None:
            await services.files.delete(record)
        # A concurrent upload with the same key won the insert: compare with its file.
        check_replay(stored, digest)
        log.info("job.duplicate", extra={"job_id": stored.id})
        return stored, False
    log.info(
        "job.accepted",
        extra={
            "job_id": stored.id,
            "origin": origin.kind.value,
            "extension": extension,
            "size": None if record is None else record.size,
            "link": record is None,
            "short": stored.short,
        },
    )
    services.wakeup.notify(stored.state)
    if notices:
        # ``create`` wrote the ``accepted`` notice into the outbox (ADR 35). The intake
        # sends it at once itself, as a reply should come (an API-only process runs no
        # delivery loop); if it cannot, the row stays and a delivery loop retries it.
        try:
            await deliver_next(services, job_id=stored.id)
        except Exception as exc:  # noqa: BLE001 - the job is stored; the outbox keeps the notice
            log.warning("intake.notice_error", extra={"error_type": type(exc).__name__})
            services.wakeup.notify(OUTBOX)
    return stored, True


async def first_job(services: Services, dedup_key: str | None) -> Job | None:
    """The job that first used ``dedup_key``; None without a key, or for a key not seen yet.

    An intake asks before it takes the bytes in, so a retry is answered with
    the first job at once; ``check_replay`` then judges whether it is the same
    recording. With ``submit``'s own check of a race lost in ``create``, these
    are where duplicates are judged, and nowhere else.
    """
    return None if dedup_key is None else await services.jobs.find_by_dedup_key(dedup_key)


def check_replay(first: Job, digest: str | None) -> None:
    """Raise ``DedupKeyReused`` unless ``digest`` is the one ``first`` was received with.

    Either digest unknown (a job from before digests were kept, or an intake
    that keeps none) is no evidence of a different file: the replay stands.
    """
    if first.upload_digest is not None and digest is not None and digest != first.upload_digest:
        raise DedupKeyReused
