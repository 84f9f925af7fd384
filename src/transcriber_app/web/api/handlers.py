"""The API's handlers: upload, status, transcript, rename, delete; its errors as JSON."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from transcriber_app.bootstrap import Runtime
from transcriber_app.web.api.auth import dedup_key_of, require_token
from transcriber_app.web.bodies import JobStatus, SpeakerNames, Titled
from transcriber_app.web.errors import ApiError, error_response
from transcriber_app.web.intake import insufficient_storage, intake
from transcriber_app.web.openai_errors import OpenAIFault, openai_error_response
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
    check_declared_length,
)
from transcriber_core import deletion, naming, speakers
from transcriber_core.entities import Job, State
from transcriber_core.errors import (
    JobChanged,
    JobNotFound,
    OptionRefused,
    TranscriberError,
)
from transcriber_core.policy import reachable_by
from transcriber_core.speakers import BadSpeakers
from transcriber_core.titles import BAD_TITLE, clean_title

log = logging.getLogger("transcriber.http")


async def upload(request: Request) -> Response:
    """``POST /api/audio``: stream the ``file`` field to a temp file and enqueue a job (202).

    Everything that can be refused without the body (token, idempotency
    key, content type, declared length) is refused before reading it.
    """
    return await intake(request, refuse_before_body, require_token)


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


def refuse_unfit_body(request: Request) -> None:
    """413 for a declared length over the cap, 507 while the disk is short: before the body."""
    runtime = runtime_of(request)
    check_declared_length(request.headers, runtime.services.settings.max_record_bytes)
    refuse_when_short_of_space(runtime)


def refuse_when_short_of_space(runtime: Runtime) -> None:
    """507 while the data dir has less free space than ``[storage] min_free_bytes``."""
    if runtime.space.is_short():
        raise insufficient_storage()


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


#: The largest body ``PATCH /api/jobs/{id}`` reads: a title of 200 characters fits many times.
MAX_TITLE_BODY_BYTES = 4 * 1024


async def rename_job(request: Request) -> Response:
    """``PATCH /api/jobs/{id}``: ``{"title": "…"}`` renames the recording (200; null or "": none).

    400 ``bad_title`` for a title refused (too long, control characters, not
    a string), never repeating it; 404 ``job_not_found`` as the other job routes.
    """
    job = await reachable_job(request)
    body = await read_json_object(
        request, max_bytes=MAX_TITLE_BODY_BYTES, code=BAD_TITLE, example=': {"title": "Standup"}'
    )
    raw = body.get("title")
    if set(body) != {"title"} or not (raw is None or isinstance(raw, str)):
        raise ApiError(400, BAD_TITLE, 'send {"title": "…"}: a string, or null for none')
    try:
        title = clean_title(raw)
        saved = await runtime_of(request).services.jobs.save_title(job.id, title)
    except OptionRefused as exc:
        raise ApiError(400, exc.code, exc.message) from None
    except JobNotFound:
        raise job_not_found() from None
    except TranscriberError as exc:
        log.warning("job.title_error", extra={"error_type": type(exc).__name__})
        raise unavailable() from None
    log.info("job.titled", extra={"job_id": job.id})
    return JSONResponse(to_json(Titled.of(saved)))


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
