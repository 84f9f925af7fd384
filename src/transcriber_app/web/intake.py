"""The HTTP doors of the one way in (ADR 74): a multipart upload as a ``Door``, refusals as JSON.

``POST /api/audio`` and the workspace's ``POST /w/upload`` differ only in
their gate (``admit``: a bearer token and its Idempotency-Key, or a session
and its CSRF token); ``/v1`` reads the same form with OpenAI's fields
(``openai_api``). Each parses its form into ``Wishes`` and leaves every
decision to ``transcriber_core.intake.take_in``. ``refusal`` is the one map
from the core's errors to ``/api``'s JSON answers.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from datetime import datetime

from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response

from transcriber_app.web.bodies import Accepted
from transcriber_app.web.errors import ApiError
from transcriber_app.web.metrics import Metrics
from transcriber_app.web.probes import metrics_of
from transcriber_app.web.quotas import quota_refused
from transcriber_app.web.schemas import to_json
from transcriber_app.web.state import runtime_of
from transcriber_app.web.uploads import CLOSE, Received, received_digest, received_file
from transcriber_core.entities import Job, Origin
from transcriber_core.errors import (
    CallbackRefused,
    DedupKeyReused,
    DiskFull,
    FetchRefused,
    FetchUnavailable,
    OptionRefused,
    QuotaExceeded,
    TranscriberError,
)
from transcriber_core.intake import take_in
from transcriber_core.naming import link_digest
from transcriber_core.ports import Proof, Sender, Staged, Wishes
from transcriber_core.speakers import BadSpeakers

log = logging.getLogger("transcriber.http")

#: What admits an upload before its body is read: the owner key its job is stored with
#: (None on an open API) and its dedup key, or an ``ApiError`` that closes the connection.
Admission = Callable[[Request], Awaitable[tuple[str | None, str | None]]]
#: Who sends an upload, asked again once its body is in: the credential alone (the owner
#: key, or None on an open API), or an ``ApiError``; never the body's fit or the disk, which
#: the body being in has settled (ADR 67).
Credential = Callable[[Request], Awaitable[str | None]]
#: The form field that asks for speaker labels (SPEC §18).
SPEAKERS_FIELD = "speakers"
#: The form field of the recording's title (SPEC §26).
TITLE_FIELD = "title"
#: The form field that asks for a summary once the recording is done (SPEC §27).
SUMMARY_FIELD = "summary"
#: What the ``summary`` field may say: a form's and an HTML checkbox's ways of yes and no.
SUMMARY_VALUES = {"true": True, "1": True, "on": True, "false": False, "0": False, "off": False}
#: The stable code of a refusal for want of disk space (reference: Limits).
INSUFFICIENT_STORAGE = "insufficient_storage"


class FormDoor:
    """A multipart upload as a door: the ``file`` field streamed once, the other fields read.

    ``read`` says whether the body was (or is being) read: a refusal before
    it closes the connection. ``size`` is the recording's, once staged.
    """

    def __init__(
        self, request: Request, credential: Credential, sender: Sender, *, digest: bool
    ) -> None:
        self.request = request
        #: The credential the request showed before its body; asked again once the body is in.
        self.credential = credential
        self._sender = sender
        #: Hash the recording on the way (an upload with an Idempotency-Key, ADR 21).
        self.digest = digest
        self.read = False
        self.size: int | None = None
        #: The form sent a link (``url``) instead of a file.
        self.linked = False

    async def sender(self) -> Sender:
        """Who sends it: decided by the gate before the body."""
        return self._sender

    async def sender_again(self) -> Sender:
        """The credential asked again once the body is in: its refusal (401, 403), or the sender."""
        again = await self.credential(self.request)
        if again != self._sender.owner:  # pragma: no cover - a gate answers alike, or refuses
            raise ApiError(401, "unauthorized", "the upload's sender changed while it was sent")
        return self._sender

    async def proof(self, first: Job) -> Proof:
        """The body's digest, hashed and never written; unread when ``first`` kept none (ADR 21)."""
        if first.upload_digest is None:
            return Proof()
        self.read = True
        settings = runtime_of(self.request).services.settings
        digest = await received_digest(
            self.request,
            max_bytes=settings.max_record_bytes,
            inactivity=settings.upload_inactivity_timeout.total_seconds(),
            deadline=settings.upload_deadline.total_seconds(),
        )
        return Proof(digest=digest)

    @contextlib.asynccontextmanager
    async def staged(self) -> AsyncIterator[Staged]:
        """The recording in a staging file, or the form's link, with its fields as ``Wishes``."""
        self.read = True
        async with self.receiving() as received:
            url = received.url
            self.size = received.size
            if url is not None:
                self.linked = True
                yield Staged(
                    path=None,
                    extension="",
                    url=url,
                    digest=link_digest(url) if self.digest else None,
                    wishes=self.wishes(received),
                )
                return
            yield Staged(
                path=received.path,
                extension=received.extension,
                digest=received.digest,
                wishes=self.wishes(received),
            )

    def receiving(self) -> AbstractAsyncContextManager[Received]:
        """``received_file`` with the service's limits: the recording, staged, inside the block."""
        services = runtime_of(self.request).services
        return received_file(
            self.request,
            files=services.files,
            max_bytes=services.settings.max_record_bytes,
            inactivity=services.settings.upload_inactivity_timeout.total_seconds(),
            deadline=services.settings.upload_deadline.total_seconds(),
            digest=self.digest,
        )

    def wishes(self, received: Received) -> Wishes:
        """The form's ``language``, ``prompt``, ``task``, ``speakers``, callback, title, summary.

        ``speakers`` left out means ``[diarization] default``; ``summary`` left
        out, ``[llm] auto_summary``. 400 ``bad_summary`` for a summary that is
        neither yes nor no.
        """
        speakers = received.field(SPEAKERS_FIELD)
        if speakers is None:
            speakers = runtime_of(self.request).config.diarization.default
        return Wishes(
            language=received.field("language"),
            prompt=received.field("prompt"),
            task=received.field("task"),
            speakers=speakers,
            callback_url=received.callback_url,
            title=received.field(TITLE_FIELD),
            summary=summary_wish(received.field(SUMMARY_FIELD)),
        )


def summary_wish(value: str | None) -> bool | None:
    """The ``summary`` field as a wish: None when left out; 400 ``bad_summary`` when unclear."""
    if value is None:
        return None
    try:
        return SUMMARY_VALUES[value.strip().lower()]
    except KeyError:
        raise ApiError(400, "bad_summary", "summary is true or false") from None


async def intake(request: Request, admit: Admission, credential: Credential) -> Response:
    """Take the request's recording into a job of the owner ``admit`` says: 202, or ``ApiError``.

    ``credential`` is the part of ``admit`` asked again once the body is in.

    The door of ``/api/audio`` and the workspace's upload: the same limits,
    fields, errors and metrics; the staging file never outlives a refusal.
    """
    runtime = runtime_of(request)
    metrics = metrics_of(request)
    services = runtime.services
    started = time.monotonic()
    door: FormDoor | None = None
    try:
        caller, dedup_key = await admit(request)
        door = FormDoor(request, credential, Sender(owner=caller), digest=dedup_key is not None)
        taken = await take_in(services, door, origin=Origin.http(), dedup_key=dedup_key)
    except ClientDisconnect:
        metrics.uploads.labels("disconnected").inc()
        log.info("upload.aborted", extra={"reason": "client_disconnected"})
        return Response(status_code=400)
    except (ApiError, TranscriberError, BadSpeakers) as exc:
        unread = door is None or not door.read
        raise refused(metrics, exc, now=services.clock.now(), unread=unread) from None
    job = taken.job
    outcome = "accepted" if taken.is_new else "duplicate"
    metrics.uploads.labels(outcome).inc()
    if door.size is None:
        # A retry answered by its proof: nothing was stored.
        log.info("upload.received", extra={"job_id": job.id, "outcome": outcome})
        return accepted(job, replayed=True, headers=None if door.read else CLOSE)
    if taken.is_new:
        metrics.upload_bytes.inc(door.size)
    seconds = time.monotonic() - started
    log.info(
        "upload.received",
        extra={
            "job_id": job.id,
            "outcome": outcome,
            "size": door.size,
            "seconds": round(seconds, 3),
        },
    )
    return accepted(job, replayed=not taken.is_new)


def accepted(job: Job, *, replayed: bool, headers: dict[str, str] | None = None) -> Response:
    """The 202 of an upload: the job id, where to poll it, and whether it is a replay."""
    answer = {"Location": f"/api/status/{job.id}", **(headers or {})}
    if replayed:
        answer["Idempotent-Replayed"] = "true"
    return JSONResponse(to_json(Accepted(job_id=job.id)), status_code=202, headers=answer)


def refused(
    metrics: Metrics, exc: ApiError | TranscriberError | BadSpeakers, *, now: datetime, unread: bool
) -> ApiError:
    """``exc`` as the upload's answer, counted and logged; ``unread``: the body was left unread."""
    error = refusal(exc, now=now)
    if error is None:
        metrics.uploads.labels("unavailable").inc()
        log.warning("upload.error", extra={"error_type": type(exc).__name__})
        return ApiError(503, "unavailable", "the service cannot store recordings now")
    if unread:
        error.headers = {**(error.headers or {}), **CLOSE}
    metrics.uploads.labels(error.code).inc()
    say = log.warning if error.status >= 500 else log.info
    say("upload.refused", extra={"status": error.status, "code": error.code})
    return error


def refusal(  # noqa: PLR0911 - one answer per kind of refusal reads best
    exc: ApiError | TranscriberError | BadSpeakers, *, now: datetime
) -> ApiError | None:
    """The HTTP answer to a refusal of the one way in; None for an outage (503 ``unavailable``).

    400 with the option's code (``bad_language``, ``bad_speakers``,
    ``webhooks_disabled``, ``callback_address_refused``…; a link's
    ``bad_url``, ``url_not_allowed``, ``playlist_not_supported``,
    ``url_unreachable``…), 422
    ``idempotency_key_reused``, 429 ``quota_exceeded``, 507
    ``insufficient_storage``; a door's own ``ApiError`` as it is.
    """
    if isinstance(exc, ApiError):
        return exc
    if isinstance(exc, BadSpeakers):
        return ApiError(400, "bad_speakers", str(exc))
    if isinstance(exc, (OptionRefused, CallbackRefused)):
        return ApiError(400, exc.code, exc.message)
    if isinstance(exc, FetchRefused):
        return ApiError(400, exc.code, link_refused(exc.code))
    if isinstance(exc, FetchUnavailable):
        return ApiError(
            400, "url_unreachable", "the link's host cannot be reached now; check the link"
        )
    if isinstance(exc, QuotaExceeded):
        return quota_refused(exc, now=now)
    if isinstance(exc, DedupKeyReused):
        return ApiError(
            422,
            "idempotency_key_reused",
            "this Idempotency-Key was first used with a different file;"
            " send a new file with a new key",
        )
    return insufficient_storage() if isinstance(exc, DiskFull) else None


#: What each refusal of a link at intake says (SPEC §28); never the link itself.
LINK_REFUSALS = {
    "bad_url": "url must be an http or https link of at most 2048 characters",
    "url_not_allowed": "the link leads to an address this service does not fetch from",
    "playlist_not_supported": "the link names a playlist; send a link to one recording",
    "unsupported_url": "no recording was found behind the link",
    "links_disabled": "this service fetches no links; send the recording as a file",
}


def link_refused(code: str) -> str:
    """The text of a link refused with ``code``, in our own words."""
    return LINK_REFUSALS.get(code, "the link cannot be fetched")


def insufficient_storage() -> ApiError:
    """The 507 while the data dir is short of space, before or while the body is written."""
    return ApiError(
        507,
        INSUFFICIENT_STORAGE,
        "the service is short of disk space; send the recording again later",
        headers={"Retry-After": "60"},
    )
