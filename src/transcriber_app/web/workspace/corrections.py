"""Correcting one's transcript in place, undoing it, and downloading it (SPEC §20, ADR 57).

``POST /w/recordings/{id}/words`` takes ``{"version", "start", "end",
"text"}`` as JSON from the page's script, with the session's CSRF token in
the ``X-CSRF-Token`` header, and answers JSON: the stretch's new words with
their indices, the job's new version and what the page's other forms now
carry as having seen (``seen``: a rename after one's own correction is no
conflict), or ``{"error": code, "message"}``
(403 without a session or the token, 404 for anyone else's job, 400 for a
bad body, range or text, 409 ``edit_conflict`` when someone saved first or
``not_done``, 422 ``correction_too_complex`` or ``transcript_too_long``).
A correction's work is bounded and taken in turns (ADR 65): the body is
read first, then one person's corrections go one at a time, each reading
the job and comparing its version when its turn comes, before any
alignment; one alignment at a time in the process runs on the event loop in
slices with other requests served between them, and is dropped when the
client has gone. ``POST /w/recordings/{id}/restore`` is a plain form that puts
the recognizer's transcript back. ``GET /w/recordings/{id}/transcript.txt``
(``.srt``, ``.vtt``, ``.json``) downloads the transcript as it now reads,
named by the recording's title, never by the sender's file name.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import AsyncIterator, Generator
from contextlib import asynccontextmanager
from typing import Any, TypeVar

import attrs
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import FormData
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from transcriber_app.web.errors import ApiError, error_response
from transcriber_app.web.language import N_, _
from transcriber_app.web.sessions import session_of
from transcriber_app.web.state import runtime_of
from transcriber_app.web.streams import read_json_object
from transcriber_app.web.transcripts import (
    MEDIA_TYPES,
    content_disposition,
    no_transcript,
    why_no_transcript,
)
from transcriber_app.web.workspace import transcript, views
from transcriber_core.corrections import (
    MAX_TEXT_CHARS,
    BadCorrection,
    CorrectionTooBig,
    correcting,
    restoration_of,
    shown_tokens,
)
from transcriber_core.entities import Job, State
from transcriber_core.errors import JobChanged, JobNotFound
from transcriber_core.people import Person
from transcriber_core.rendering import TranscriptFormat, render

log = logging.getLogger("transcriber.workspace")

#: The header that carries the session's CSRF token on the script's JSON posts.
CSRF_HEADER = "X-CSRF-Token"
#: The largest JSON body of a correction: the longest text, four bytes a character, and room.
MAX_BODY_BYTES = MAX_TEXT_CHARS * 4 + 1024
#: What a conflict says to the person.
CONFLICT = N_(
    "Someone saved a change to this transcript after you opened it; nothing was saved. "
    "Reload the page to see the transcript as it is now."
)


def _whole(value: object, name: str) -> int:
    # JSON's true and false are ints to Python: refused like any other non-integer.
    if not isinstance(value, int) or isinstance(value, bool):
        raise ApiError(400, "bad_request", f"{name} must be an integer")
    return value


def _word_items(job: Job, start: int, count: int) -> list[dict[str, Any]]:
    """The words ``[start, start + count)`` as the page shows them (``shown_tokens``)."""
    shown = shown_tokens(job)
    return [
        {"i": i, "text": shown[i], "start": w.start, "end": w.end, "speaker": w.speaker}
        for i, w in enumerate(job.words[start : start + count], start=start)
    ]


@attrs.define
class _Turns:
    """One person's corrections in this process: who holds the turn, and their last save."""

    #: Held by the correction whose turn it is.
    lock: asyncio.Lock = attrs.field(factory=asyncio.Lock)
    #: Corrections holding or waiting for the turn.
    count: int = 0
    #: The job and version the person's last correction here saved.
    saved: tuple[str, int] | None = None


class Corrector:
    """``POST /w/recordings/{id}/words`` with this process's turns at correcting (ADR 57, 65).

    A person's corrections wait for each other: when a turn comes, one from
    a version saved meanwhile is refused at once (versions only grow), before
    the job is read again or anything is aligned. Only one correction is
    aligned at a time among everyone's, so many requests cost the others one
    slice of work at a time, never many.
    """

    def __init__(self) -> None:
        #: The turns of each person with a correction in hand.
        self._people: dict[str, _Turns] = {}
        #: Held while a correction is aligned.
        self._aligning = asyncio.Lock()

    @asynccontextmanager
    async def _turn_of(self, key: str) -> AsyncIterator[_Turns]:
        """The person's turn: their earlier corrections are done when it begins."""
        turns = self._people.setdefault(key, _Turns())
        turns.count += 1
        try:
            async with turns.lock:
                yield turns
        finally:
            turns.count -= 1
            if not turns.count:
                del self._people[key]

    async def save_words(self, request: Request) -> Response:
        """``POST /w/recordings/{id}/words``: save a corrected stretch, compare-and-set."""
        try:
            return await self._save_words(request)
        except ApiError as exc:
            return error_response(exc)

    async def _save_words(self, request: Request) -> Response:
        session = session_of(request)
        person = await views.signed_in(request)
        if person is None:
            raise ApiError(403, "not_signed_in", "sign in first")
        if not session.csrf_ok(request.headers.get(CSRF_HEADER)):
            raise ApiError(403, "bad_csrf", "the page is stale or forged; reload it and try again")
        body = await read_json_object(request, max_bytes=MAX_BODY_BYTES, code="bad_request")
        version = _whole(body.get("version"), "version")
        start, end = _whole(body.get("start"), "start"), _whole(body.get("end"), "end")
        text = body.get("text")
        if not isinstance(text, str):
            raise ApiError(400, "bad_request", "text must be a string")
        async with self._turn_of(person.owner_key) as turns:
            job_id = request.path_params["job_id"]
            if turns.saved is not None and turns.saved[0] == job_id and turns.saved[1] > version:
                raise ApiError(409, "edit_conflict", CONFLICT)
            job = await views.own_job(request, person)
            if job is None:
                raise ApiError(404, "job_not_found", "there is no such recording among yours")
            if job.state is not State.DONE:
                raise ApiError(409, *no_transcript(job))
            if job.edit_version != version:
                raise ApiError(409, "edit_conflict", CONFLICT)
            try:
                async with self._aligning:
                    correction = await _worked(request, correcting(job, start, end, text))
            except CorrectionTooBig as exc:
                raise ApiError(422, exc.code, exc.message) from None
            except BadCorrection as exc:
                raise ApiError(400, exc.code, exc.message) from None
            if correction is None:
                log.info("workspace.correction_abandoned", extra={"job_id": job.id})
                raise ApiError(499, "client_closed_request", "the client left; nothing was saved")
            try:
                saved = await runtime_of(request).services.corrections.save_correction(
                    job.id, correction, version=version
                )
            except JobChanged:
                raise ApiError(409, "edit_conflict", CONFLICT) from None
            except JobNotFound:
                raise ApiError(
                    404, "job_not_found", "there is no such recording among yours"
                ) from None
            turns.saved = (job.id, saved.edit_version)
        count = len(saved.words) - len(job.words) + (end - start)
        log.info("workspace.corrected", extra={"job_id": job.id, "words": count})
        return JSONResponse(
            {
                "version": saved.edit_version,
                # The page's forms (a speaker's rename) carry it: they stay current (SPEC §26).
                "seen": transcript.version(saved),
                "start": start,
                "end": start + count,
                "shift": count - (end - start),
                "words": _word_items(saved, start, count),
                "corrected": saved.corrected,
            }
        )


_T = TypeVar("_T")


async def still_wanted(request: Request) -> bool:
    """Let the event loop serve others, then tell whether the client still waits for the answer."""
    await asyncio.sleep(0)
    return not await request.is_disconnected()


async def _worked(request: Request, work: Generator[None, None, _T]) -> _T | None:
    """Sliced ``work`` run to its end on the event loop; None once the client has gone."""
    try:
        while await still_wanted(request):
            try:
                next(work)
            except StopIteration as done:
                result: _T = done.value
                return result
        return None
    finally:
        work.close()


@views.person_action
async def restore(request: Request, form: FormData, person: Person) -> Response:
    """``POST /w/recordings/{id}/restore``: put the recognizer's transcript back (a form)."""
    job = await views.own_job(request, person)
    if job is None:
        return views.not_found(request, person)
    session = session_of(request)
    back = views.recording_url(job.id)
    if str(job.edit_version) != form.get("version"):
        session.flash(_(CONFLICT))
        return views.see_other(back)
    try:
        restored = restoration_of(job)
        await runtime_of(request).services.corrections.save_correction(
            job.id, restored, version=job.edit_version
        )
    except BadCorrection as exc:
        session.flash(_("Nothing to restore: %(reason)s.", reason=exc.message))
        return views.see_other(back)
    except JobChanged:
        session.flash(_(CONFLICT))
        return views.see_other(back)
    except JobNotFound:
        return views.not_found(request, person)
    log.info("workspace.restored", extra={"job_id": job.id})
    session.flash(_("The recognizer's transcript is back; your corrections are gone."))
    return views.see_other(back)


@views.person_page
async def download(request: Request, person: Person) -> Response:
    """``GET /w/recordings/{id}/transcript.{txt,srt,vtt,json}``: the transcript as it reads now."""
    try:
        wanted = TranscriptFormat(request.path_params["format"])
    except ValueError:
        return views.not_found(request, person)
    job = await views.own_job(request, person)
    if job is None:
        return views.not_found(request, person)
    if job.state is not State.DONE:
        context = {"title": _("No transcript yet"), "text": why_no_transcript(job)}
        return views.render(request, "message.html", context, person=person, status_code=409)
    body = await run_in_threadpool(functools.partial(render, job, wanted, corrected=job.corrected))
    return Response(
        body,
        media_type=MEDIA_TYPES[wanted],
        headers={"Content-Disposition": content_disposition(job, wanted)},
    )
