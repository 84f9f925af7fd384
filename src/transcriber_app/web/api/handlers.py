"""The API's handlers: upload, status, transcript, delete; and its errors answered as JSON."""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from contextlib import AbstractAsyncContextManager
from typing import Any

from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response

from transcriber_app.bootstrap import Runtime
from transcriber_app.web.api.auth import dedup_key_of, require_token
from transcriber_app.web.bodies import Accepted, JobStatus, SpeakerNames
from transcriber_app.web.errors import ApiError, error_response
from transcriber_app.web.metrics import Metrics
from transcriber_app.web.openai_errors import OpenAIFault, openai_error_response
from transcriber_app.web.probes import metrics_of
from transcriber_app.web.quotas import QUOTA_EXCEEDED, quota_refused
from transcriber_app.web.schemas import to_json
from transcriber_app.web.state import runtime_of
from transcriber_app.web.streams import read_json_object
from transcriber_app.web.transcripts import (
    ALLOWED,
    no_transcript,
    transcript_format,
    transcript_response,
)
from transcriber_app.web.uploads import (
    CLOSE,
    Received,
    check_declared_length,
    received_digest,
    received_file,
)
from transcriber_core import deletion, naming, speakers
from transcriber_core.entities import Job, Origin, State
from transcriber_core.errors import (
    CallbackRefused,
    DedupKeyReused,
    DiskFull,
    JobChanged,
    JobNotFound,
    OptionRefused,
    QuotaExceeded,
    TranscriberError,
)
from transcriber_core.intake import check_quota, check_replay, first_job, submit
from transcriber_core.languages import RecognitionRequest, recognition_request
from transcriber_core.policy import reachable_by
from transcriber_core.speakers import BadSpeakers, parse_wanted

log = logging.getLogger("transcriber.http")


#: What admits an upload before its body is read: the owner key its job is stored with
#: (None on an open API) and its dedup key, or an ``ApiError`` that closes the connection.
Admission = Callable[[Request], Awaitable[tuple[str | None, str | None]]]


async def upload(request: Request) -> Response:
    """``POST /api/audio``: stream the ``file`` field to a temp file and enqueue a job (202).

    Everything that can be refused without the body (token, idempotency
    key, content type, declared length) is refused before reading it.
    """
    return await intake(request, refuse_before_body)


async def intake(request: Request, admit: Admission) -> Response:
    """Take the request's recording into a job of the owner ``admit`` says: 202, or ``ApiError``.

    The one intake of a multipart upload, for ``/api/audio`` and the
    workspace's upload (``admit`` is the caller's own gate: a bearer token,
    or a session and its CSRF token): the same limits, the same fields
    (``language``, ``speakers``, ``prompt``, ``callback_url``), the same
    errors and metrics. The staging file never outlives a refusal.
    """
    runtime = runtime_of(request)
    metrics = metrics_of(request)
    services = runtime.services
    started = time.monotonic()
    try:
        caller, dedup_key = await admit(request)
        first = await first_job(services, dedup_key)
        if first is not None:
            return await replay(request, first)
        await refuse_when_quota_spent(request, caller)
        async with receiving(request, digest=dedup_key is not None) as received:
            size = received.size
            request_ = requested(runtime, received.field)
            if received.callback_url is not None:
                await check_callback(runtime, received.callback_url)
            speakers_wanted = wanted_speakers(runtime, received.field(SPEAKERS_FIELD))
            await refuse_unless_still_admitted(request, admit, caller)
            job, is_new = await submit(
                services,
                received.path,
                extension=received.extension,
                origin=Origin.http(),
                dedup_key=dedup_key,
                digest=received.digest,
                owner=caller,
                callback_url=received.callback_url,
                speakers_wanted=speakers_wanted,
                request=request_,
            )
    except ApiError as exc:
        metrics.uploads.labels(exc.code).inc()
        log.info("upload.refused", extra={"status": exc.status, "code": exc.code})
        raise
    except DedupKeyReused:
        raise _key_reused(metrics) from None
    except QuotaExceeded as exc:
        metrics.uploads.labels(QUOTA_EXCEEDED).inc()
        log.info("upload.refused", extra={"status": 429, "code": QUOTA_EXCEEDED})
        raise quota_refused(exc, now=services.clock.now()) from None
    except ClientDisconnect:
        metrics.uploads.labels("disconnected").inc()
        log.info("upload.aborted", extra={"reason": "client_disconnected"})
        return Response(status_code=400)
    except DiskFull:
        # The disk filled up while the body was written: the same answer as before it.
        metrics.uploads.labels(INSUFFICIENT_STORAGE).inc()
        log.warning("upload.refused", extra={"status": 507, "code": INSUFFICIENT_STORAGE})
        raise _insufficient_storage() from None
    except TranscriberError as exc:
        metrics.uploads.labels("unavailable").inc()
        log.warning("upload.error", extra={"error_type": type(exc).__name__})
        raise ApiError(503, "unavailable", "the service cannot store recordings now") from None
    seconds = time.monotonic() - started
    outcome = "accepted" if is_new else "duplicate"
    metrics.uploads.labels(outcome).inc()
    if is_new:
        metrics.upload_bytes.inc(size)
    log.info(
        "upload.received",
        extra={"job_id": job.id, "outcome": outcome, "size": size, "seconds": round(seconds, 3)},
    )
    return accepted(job, replayed=not is_new)


async def refuse_before_body(request: Request) -> tuple[str | None, str | None]:
    """The caller (token hash) and dedup key of an upload, or what refuses it before its body.

    Token, Idempotency-Key, declared length, disk space; a refusal closes the
    connection (``CLOSE``): the body is left unread, uvicorn must not swallow it.
    """
    try:
        caller = await require_token(request)
        dedup_key = dedup_key_of(request, caller)
        refuse_unfit_body(request)
    except ApiError as exc:
        exc.headers = {**(exc.headers or {}), **CLOSE}
        raise
    return caller, dedup_key


async def refuse_unless_still_admitted(
    request: Request, admit: Admission, caller: str | None
) -> None:
    """The door's gate asked again once the body is in, before anything is stored (SPEC §29).

    An upload can run for hours: a person disabled, a token revoked or a
    session ended while it ran is refused with the gate's own answer (401,
    403), and nothing is charged or stored.
    """
    again, _ = await admit(request)
    if again != caller:  # pragma: no cover - a gate answers one request alike, or refuses it
        raise ApiError(401, "unauthorized", "the upload's sender changed while it was sent")


def refuse_unfit_body(request: Request) -> None:
    """413 for a declared length over the cap, 507 while the disk is short: before the body."""
    runtime = runtime_of(request)
    check_declared_length(request.headers, runtime.services.settings.max_record_bytes)
    refuse_when_short_of_space(runtime)


async def refuse_when_quota_spent(request: Request, caller: str | None) -> None:
    """429 before the body when the caller's day is already spent (ADR 59); the body unread.

    ``submit`` decides for good with the recording's length; this spares the
    upload of a recording that would be refused anyway.
    """
    services = runtime_of(request).services
    try:
        await check_quota(services, caller)
    except QuotaExceeded as exc:
        refusal = quota_refused(exc, now=services.clock.now())
        refusal.headers = {**(refusal.headers or {}), **CLOSE}
        raise refusal from None


def receiving(request: Request, *, digest: bool) -> AbstractAsyncContextManager[Received]:
    """``received_file`` with the service's limits: the recording, staged, inside the block."""
    services = runtime_of(request).services
    return received_file(
        request,
        files=services.files,
        max_bytes=services.settings.max_record_bytes,
        inactivity=services.settings.upload_inactivity_timeout.total_seconds(),
        deadline=services.settings.upload_deadline.total_seconds(),
        digest=digest,
    )


#: The stable code of a refusal for want of disk space (reference: Limits).
INSUFFICIENT_STORAGE = "insufficient_storage"


def _insufficient_storage() -> ApiError:
    return ApiError(
        507,
        INSUFFICIENT_STORAGE,
        "the service is short of disk space; send the recording again later",
        headers={"Retry-After": "60"},
    )


#: The form field that asks for speaker labels (SPEC §18).
SPEAKERS_FIELD = "speakers"


def wanted_speakers(runtime: Runtime, value: str | None) -> int | None:
    """The form's ``speakers`` (None: ``[diarization] default``), or 400 ``bad_speakers``."""
    try:
        wanted = parse_wanted(runtime.config.diarization.default if value is None else value)
    except BadSpeakers as exc:
        raise ApiError(400, "bad_speakers", str(exc)) from None
    if wanted is not None and not speakers.labels_speakers(runtime.services):
        raise ApiError(400, "bad_speakers", "this service labels no speakers; send speakers=off")
    return wanted


async def check_callback(runtime: Runtime, url: str) -> None:
    """400 unless ``url`` may be called when the job ends (ADR 35); the reason is given.

    Codes: ``webhooks_disabled`` (no ``[webhooks] secret``), ``bad_callback_url``
    (not http(s), too long, credentials), ``callback_address_refused`` (its
    host resolves to a refused address, or not at all). The URL itself is
    never logged nor echoed: its query string may carry the caller's secret.
    """
    sender = runtime.services.webhooks
    if sender is None:
        raise ApiError(
            400,
            "webhooks_disabled",
            "this service sends no webhooks ([webhooks] secret is unset); send no callback_url",
        )
    try:
        await sender.check(url)
    except CallbackRefused as exc:
        raise ApiError(400, exc.code, exc.message) from None


def requested(runtime: Runtime, field: Callable[[str], str | None]) -> RecognitionRequest:
    """The form's ``language``, ``prompt`` and ``task``, checked against the recognizer (SPEC §18).

    400 with the refusal's code (``bad_language`` naming the accepted values,
    ``bad_prompt``, ``bad_task``, ``translation_unsupported``).
    """
    try:
        return recognition_request(
            runtime.services.recognizer.abilities,
            language=field("language"),
            prompt=field("prompt"),
            task=field("task"),
        )
    except OptionRefused as exc:
        raise ApiError(400, exc.code, exc.message) from None


def refuse_when_short_of_space(runtime: Runtime) -> None:
    """507 while the data dir has less free space than ``[storage] min_free_bytes``."""
    if runtime.space.is_short():
        raise _insufficient_storage()


async def replay(request: Request, first: Job) -> Response:
    """Answer an upload whose Idempotency-Key is known: the first job, if it is the same file.

    The body is read and hashed, never written; a job from before digests
    were kept is answered at once, its body left unread (ADR 21).
    """
    metrics = metrics_of(request)
    if first.upload_digest is None:
        metrics.uploads.labels("duplicate").inc()
        log.info("upload.received", extra={"job_id": first.id, "outcome": "duplicate"})
        return accepted(first, replayed=True, headers=CLOSE)
    settings = runtime_of(request).services.settings
    digest = await received_digest(
        request,
        max_bytes=settings.max_record_bytes,
        inactivity=settings.upload_inactivity_timeout.total_seconds(),
        deadline=settings.upload_deadline.total_seconds(),
    )
    check_replay(first, digest)
    metrics.uploads.labels("duplicate").inc()
    log.info("upload.received", extra={"job_id": first.id, "outcome": "duplicate"})
    return accepted(first, replayed=True)


def _key_reused(metrics: Metrics) -> ApiError:
    """The 422 for an Idempotency-Key sent again with a different file."""
    metrics.uploads.labels("idempotency_key_reused").inc()
    log.info("upload.refused", extra={"status": 422, "code": "idempotency_key_reused"})
    return ApiError(
        422,
        "idempotency_key_reused",
        "this Idempotency-Key was first used with a different file; send a new file with a new key",
    )


def accepted(job: Job, *, replayed: bool, headers: dict[str, str] | None = None) -> Response:
    """The 202 of an upload: the job id, where to poll it, and whether it is a replay."""
    answer = {"Location": f"/api/status/{job.id}", **(headers or {})}
    if replayed:
        answer["Idempotent-Replayed"] = "true"
    return JSONResponse(to_json(Accepted(job_id=job.id)), status_code=202, headers=answer)


def job_not_found() -> ApiError:
    """The one 404 of a job: unknown, deleted, or another token's are answered alike."""
    return ApiError(404, "job_not_found", "no job has this id")


async def reachable_job(request: Request) -> Job:
    """The job of the path's ``job_id`` if the caller's token reaches it (ADR 36).

    401 without a valid token; 404 ``job_not_found`` alike for an unknown
    id, one no id could be (``naming.well_formed_id``) and another token's
    job; 503 when the database does not answer.
    """
    caller = await require_token(request)
    job_id = request.path_params["job_id"]
    if not naming.well_formed_id(job_id):
        raise job_not_found()
    try:
        # Filtered in the query: another token's job, or a person's on an open API, is not
        # even read (its 404's time).
        job = await runtime_of(request).services.jobs.get(
            job_id, owned_by=caller, anonymous=caller is None
        )
    except JobNotFound:
        raise job_not_found() from None
    except TranscriberError as exc:
        log.warning("job.read_error", extra={"error_type": type(exc).__name__})
        raise unavailable() from None
    if not reachable_by(job, caller):
        raise job_not_found()
    return job


def unavailable() -> ApiError:
    """The 503 of a route whose job database did not answer."""
    return ApiError(503, "unavailable", "the job database does not answer now")


async def status(request: Request) -> Response:
    """``GET /api/status/{id}``: the job's state and, when done, its text."""
    job = await reachable_job(request)
    services = runtime_of(request).services
    try:
        position = None
        if not job.state.is_terminal:
            position = await services.jobs.queue_position(job.id, lease=services.settings.lease)
        parts = await services.jobs.get_parts(job.id)
    except JobNotFound:
        raise job_not_found() from None
    except TranscriberError as exc:
        log.warning("status.error", extra={"error_type": type(exc).__name__})
        raise unavailable() from None
    return JSONResponse(to_json(JobStatus.of(job, parts, queue_position=position)))


async def delete_job(request: Request) -> Response:
    """``DELETE /api/jobs/{id}``: the job, its transcript and every file it holds go (204).

    Afterwards the job answers 404 everywhere; a worker still holding it
    writes nothing and deletes what it stored (ADR 36).
    """
    job = await reachable_job(request)
    try:
        await deletion.delete_job(runtime_of(request).services, job.id)
    except JobNotFound:
        # Deleted by another request in between: the same 404 as any unknown id.
        raise job_not_found() from None
    except TranscriberError as exc:
        log.warning("delete.error", extra={"error_type": type(exc).__name__})
        raise unavailable() from None
    return Response(status_code=204)


#: The largest body ``PATCH /api/jobs/{id}/speakers`` reads: ten names of 64 characters fit.
MAX_RENAME_BYTES = 16 * 1024
#: Tries of a rename whose job changed under it (only a concurrent rename changes a done job).
_RENAME_TRIES = 3


async def rename_speakers(request: Request) -> Response:
    """``PATCH /api/jobs/{id}/speakers``: ``{"S1": "Diane"}`` renames speakers (200, all of them).

    400 ``bad_speakers`` naming the problem (not a JSON object of names, an
    unknown id, a name too long or with control characters), 413
    ``too_large``; compare-and-set like the owner's edits (ADR 23).
    """
    job = await reachable_job(request)
    new = await read_json_object(
        request, max_bytes=MAX_RENAME_BYTES, code="bad_speakers", example=': {"S1": "Diane"}'
    )
    services = runtime_of(request).services
    for _ in range(_RENAME_TRIES):
        try:
            job = await speakers.rename_speakers(services, job, new)
        except BadSpeakers as exc:
            raise ApiError(400, "bad_speakers", str(exc)) from None
        except JobChanged:
            job = await reachable_job(request)
            continue
        except JobNotFound:
            raise job_not_found() from None
        except TranscriberError as exc:
            log.warning("speakers.rename_error", extra={"error_type": type(exc).__name__})
            raise unavailable() from None
        log.info("speakers.renamed", extra={"job_id": job.id, "count": len(new)})
        return JSONResponse(to_json(SpeakerNames.of(job)))
    raise ApiError(409, "job_changed", "the job kept changing; send the names again")


async def transcript(request: Request) -> Response:
    """``GET /api/jobs/{id}/transcript?format=txt|srt|vtt|json``: a done job's transcript.

    400 ``bad_format`` naming the allowed values, 404 ``job_not_found``,
    409 ``not_done`` before the job is done, ``failed`` or ``dead`` with the
    reason when it ended without a transcript (ADR 34).
    """
    job = await reachable_job(request)
    wanted = transcript_format(request.query_params.get("format"))
    if wanted is None:
        raise ApiError(400, "bad_format", f"format must be one of: {ALLOWED}")
    if job.state is not State.DONE:
        raise ApiError(409, *no_transcript(job))
    return await transcript_response(job, wanted)


async def _api_error(request: Request, exc: Exception) -> Response:
    if not isinstance(exc, ApiError):
        raise exc
    return error_response(exc)


async def _http_error(request: Request, exc: Exception) -> Response:
    if not isinstance(exc, HTTPException):
        raise exc
    code = {404: "not_found", 405: "method_not_allowed"}.get(exc.status_code, "http_error")
    # The 405's Allow header says which methods the path takes.
    error = ApiError(exc.status_code, code, str(exc.detail), dict(exc.headers or {}))
    if request.url.path.startswith("/v1/"):
        return openai_error_response(OpenAIFault.of(error))
    return error_response(error)


def exception_handlers() -> Mapping[Any, Any]:
    """Every error answered as JSON with a stable code."""
    return {ApiError: _api_error, HTTPException: _http_error}
