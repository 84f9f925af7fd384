"""The HTTP API (reference: HTTP API): upload, status, health, metrics."""

from __future__ import annotations

import hashlib
import hmac
import logging
import re
import time
from collections.abc import Mapping, Sequence
from typing import Any

from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

from transcriber_app.bootstrap import Runtime
from transcriber_app.conditions import current_conditions, short_of_space
from transcriber_app.web.errors import ApiError, error_response
from transcriber_app.web.metrics import CONTENT_TYPE, Metrics
from transcriber_app.web.state import runtime_of
from transcriber_app.web.uploads import (
    CLOSE,
    check_declared_length,
    received_digest,
    received_file,
)
from transcriber_core.entities import Job, JobPart, Origin
from transcriber_core.errors import (
    CallbackRefused,
    DedupKeyReused,
    DiskFull,
    JobNotFound,
    TranscriberError,
)
from transcriber_core.intake import check_replay, submit
from transcriber_core.policy import lease_cutoff

log = logging.getLogger("transcriber.http")


def metrics_of(request: Request) -> Metrics:
    """The metrics the app was created with."""
    metrics: Metrics = request.app.state.metrics
    return metrics


#: What an ``Idempotency-Key`` may hold: visible ASCII, no spaces.
_IDEMPOTENCY_KEY = re.compile(r"[\x21-\x7e]{1,255}")


def require_token(request: Request) -> str:
    """401 unless the request carries one of ``[http] api_tokens``; open when there are none.

    Every configured token is compared, each in constant time, so the answer
    does not reveal how much of a token was right, nor which one. Returns a
    short fingerprint of the matching token ("" when the API is open), which
    scopes what a client may see of others' requests (idempotency keys).
    """
    tokens = runtime_of(request).config.http.api_tokens
    if not tokens:
        return ""
    scheme, _, given = request.headers.get("authorization", "").partition(" ")
    offered = given.strip().encode()
    matched = None
    for token in tokens:
        if hmac.compare_digest(offered, token.encode()):
            matched = token
    if scheme.lower() != "bearer" or matched is None:
        raise ApiError(
            401,
            "unauthorized",
            "a valid bearer token is required",
            headers={"WWW-Authenticate": "Bearer"},
        )
    return hashlib.sha256(matched.encode()).hexdigest()[:16]


def dedup_key_of(request: Request, client: str) -> str | None:
    """The job dedup key for the request's ``Idempotency-Key``; None without one.

    Scoped by the client's token fingerprint: a key another client happened
    to use must not hand this one the other's job id (a job id is a capability).
    """
    key = request.headers.get("idempotency-key")
    if key is None:
        return None
    if not _IDEMPOTENCY_KEY.fullmatch(key):
        raise ApiError(
            400,
            "bad_idempotency_key",
            "Idempotency-Key must be 1 to 255 visible ASCII characters",
        )
    return f"http:{client}:{key}"


async def upload(request: Request) -> Response:
    """``POST /api/audio``: stream the ``file`` field to a temp file and enqueue a job (202).

    Everything that can be refused without the body (token, idempotency
    key, content type, declared length) is refused before reading it.
    """
    runtime = runtime_of(request)
    metrics = metrics_of(request)
    services = runtime.services
    settings = services.settings
    started = time.monotonic()
    try:
        try:
            client = require_token(request)
            dedup_key = dedup_key_of(request, client)
            check_declared_length(request.headers, settings.max_record_bytes)
            refuse_when_short_of_space(runtime)
        except ApiError as exc:
            # The body is left unread: uvicorn must close, not swallow it for keep-alive.
            exc.headers = {**(exc.headers or {}), **CLOSE}
            raise
        first = await services.repo.find_by_dedup_key(dedup_key) if dedup_key else None
        if first is not None:
            return await replay(request, first)
        async with received_file(
            request,
            files=services.files,
            max_bytes=settings.max_record_bytes,
            inactivity=settings.upload_inactivity_timeout.total_seconds(),
            digest=dedup_key is not None,
        ) as received:
            size = received.size
            if received.callback_url is not None:
                await check_callback(runtime, received.callback_url)
            job, is_new = await submit(
                services,
                received.path,
                extension=received.extension,
                origin=Origin.http(),
                dedup_key=dedup_key,
                digest=received.digest,
                callback_url=received.callback_url,
            )
    except ApiError as exc:
        metrics.uploads.labels(exc.code).inc()
        log.info("upload.refused", extra={"status": exc.status, "code": exc.code})
        raise
    except DedupKeyReused:
        raise _key_reused(metrics) from None
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


#: The stable code of a refusal for want of disk space (reference: Limits).
INSUFFICIENT_STORAGE = "insufficient_storage"


def _insufficient_storage() -> ApiError:
    return ApiError(
        507,
        INSUFFICIENT_STORAGE,
        "the service is short of disk space; send the recording again later",
        headers={"Retry-After": "60"},
    )


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


def refuse_when_short_of_space(runtime: Runtime) -> None:
    """507 while the data dir has less free space than ``[storage] min_free_bytes``."""
    if short_of_space(runtime):
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
    return JSONResponse({"job_id": job.id}, status_code=202, headers=answer)


def status_body(
    job: Job, parts: Sequence[JobPart] = (), *, queue_position: int | None = None
) -> dict[str, Any]:
    """The public view of a job: no file ids, no origin, no lease; parts counted when split.

    ``queue_position`` (jobs waiting ahead of it in its step and lane) is
    shown while the job waits for a loop (ADR 27).
    """
    body: dict[str, Any] = {
        "job_id": job.id,
        "state": job.state.value,
        "created": job.created.isoformat(),
        "updated": job.updated.isoformat(),
    }
    if queue_position is not None:
        body["queue_position"] = queue_position
    if job.text is not None:
        body["text"] = job.text
    # A job still on its way may be waiting for the service (a full disk, a
    # refused key): that is ours to fix, not the sender's to read (reference: Limits).
    if job.error is not None and job.state.is_terminal:
        body["error"] = job.error
    if job.duration is not None:
        body["duration"] = job.duration
    if parts:
        body["parts_done"] = sum(part.done for part in parts)
        body["parts_total"] = len(parts)
    if job.language is not None:
        body["language"] = job.language
    return body


async def status(request: Request) -> Response:
    """``GET /api/status/{id}``: the job's state and, when done, its text."""
    require_token(request)
    runtime = runtime_of(request)
    services = runtime.services
    try:
        job = await services.repo.get(request.path_params["job_id"])
        position = None
        if not job.state.is_terminal:
            cutoff = lease_cutoff(services.clock.now(), services.settings)
            position = await services.repo.queue_position(job.id, lease_cutoff=cutoff)
    except JobNotFound:
        raise ApiError(404, "job_not_found", "no job has this id") from None
    parts = await services.repo.get_parts(job.id)
    return JSONResponse(status_body(job, parts, queue_position=position))


async def health(request: Request) -> Response:
    """``GET /health``: 200 when the database answers and no service condition holds.

    503 otherwise, as JSON naming the cause: ``database_unavailable``, or the
    first condition's code (``disk_full``, ``recognizer_credentials_rejected``,
    ...) with every code that holds in ``conditions``. Only codes and times
    are shown: the details are for the log and the admin page.
    """
    runtime = runtime_of(request)
    try:
        await runtime.services.repo.count_by_state()
        held = await current_conditions(runtime)
    except Exception as exc:  # noqa: BLE001 - any failure means unhealthy
        log.warning("health.error", extra={"error_type": type(exc).__name__})
        return JSONResponse(
            {"error": "database_unavailable", "message": "the job database does not answer"},
            status_code=503,
        )
    if held:
        codes = list(dict.fromkeys(condition.code for condition in held))
        return JSONResponse(
            {
                "error": codes[0],
                "message": "the service cannot do its work now: " + ", ".join(codes),
                "conditions": [{"code": c.code, "since": c.since.isoformat()} for c in held],
            },
            status_code=503,
        )
    return PlainTextResponse("ok\n")


async def scrape(request: Request) -> Response:
    """``GET /metrics``: Prometheus text; job counts are read from the database for each scrape."""
    runtime = runtime_of(request)
    collected = metrics_of(request)
    try:
        collected.set_jobs(await runtime.services.repo.count_by_state())
        collected.set_deliveries(await runtime.services.repo.pending_deliveries())
        if runtime.budgets is not None:
            collected.set_budgets(await runtime.budgets.levels(now=runtime.services.clock.now()))
    except Exception as exc:  # noqa: BLE001 - the event counters are still worth a scrape
        log.warning("metrics.error", extra={"error_type": type(exc).__name__})
    return Response(collected.exposition(), media_type=CONTENT_TYPE)


def routes() -> list[Route]:
    """The API's routes."""
    return [
        Route("/api/audio", upload, methods=["POST"]),
        Route("/api/status/{job_id}", status, methods=["GET"]),
        Route("/health", health, methods=["GET"]),
        Route("/metrics", scrape, methods=["GET"]),
    ]


async def _api_error(request: Request, exc: Exception) -> Response:
    if not isinstance(exc, ApiError):
        raise exc
    return error_response(exc)


async def _http_error(request: Request, exc: Exception) -> Response:
    if not isinstance(exc, HTTPException):
        raise exc
    code = {404: "not_found", 405: "method_not_allowed"}.get(exc.status_code, "http_error")
    return error_response(ApiError(exc.status_code, code, str(exc.detail)))


def exception_handlers() -> Mapping[Any, Any]:
    """Every error answered as JSON with a stable code."""
    return {ApiError: _api_error, HTTPException: _http_error}
