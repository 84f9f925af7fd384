"""The transcript page of one's recording: the player, the words, the speakers' names (ADR 56).

``GET /w/recordings/{id}`` renders the transcript on the server, every word
a ``span.w`` with its timing; ``/w/static/player.js`` (no inline script)
seeks and highlights. ``GET /w/recordings/{id}/media`` streams the audio
with HTTP Range from whichever store holds it, reading only the asked
bytes. ``POST /w/recordings/{id}/speakers`` renames a speaker,
compare-and-set against the page the person saw. Another person's
recording, or an unknown id, answers 404 on all three, as the list does.
"""

from __future__ import annotations

import hashlib
import html
import logging
import re
from collections.abc import AsyncIterator, Sequence

from markupsafe import Markup, escape
from starlette.datastructures import FormData
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response, StreamingResponse

from transcriber_app.web.admin.rendering import format_length
from transcriber_app.web.admin.security import form_text
from transcriber_app.web.language import _
from transcriber_app.web.sessions import session_of
from transcriber_app.web.state import runtime_of
from transcriber_app.web.streams import replay_first
from transcriber_app.web.workspace.views import (
    not_found,
    own_job,
    person_action,
    person_page,
    recording_url,
    render,
)
from transcriber_core import speakers
from transcriber_core.corrections import shown_tokens
from transcriber_core.deletion import store_for
from transcriber_core.entities import FileRecord, Job, Word
from transcriber_core.errors import FileNotFound, JobChanged, JobNotFound, TranscriberError
from transcriber_core.people import Person
from transcriber_core.services import Services
from transcriber_core.summaries import MAX_QUESTION_CHARS

log = logging.getLogger("transcriber.workspace")

#: What a browser's ``<audio>`` plays, by extension: the converted Ogg/Opus (or PCM) first.
PLAYABLE = {
    ".ogg": "audio/ogg",
    ".opus": "audio/ogg",
    ".oga": "audio/ogg",
    ".wav": "audio/wav",
    ".mp3": "audio/mpeg",
    ".m4a": "audio/mp4",
    ".aac": "audio/aac",
    ".flac": "audio/flac",
    ".webm": "audio/webm",
}
#: A pause this long after a sentence's end starts a new paragraph (seconds).
PARAGRAPH_PAUSE = 2.0
#: A paragraph this many words long ends at the next sentence's end.
PARAGRAPH_WORDS = 120
#: One range ``bytes=FIRST-LAST``, ``bytes=FIRST-`` or ``bytes=-SUFFIX``; 19 digits at most.
_RANGE = re.compile(r"bytes=(\d{0,19})-(\d{0,19})")
_SENTENCE_END = (".", "?", "!", "…")
#: One word's element; ``%`` formatting, the fastest way to 30,000 of them (docs/benchmarks.md).
_WORD = '<span class="w" data-i="%d" data-start="%.2f" data-end="%.2f">%s</span> '
#: A word that holds a character HTML gives a meaning to; most hold none and are copied as they are.
_unsafe = re.compile(r"[<>&\"']").search


# -- the page ----------------------------------------------------------------------------------


def media_url(job_id: str) -> str:
    """Where the page's player reads the recording's audio."""
    return f"{recording_url(job_id)}/media"


def clock(seconds: float) -> str:
    """``m:ss`` or ``h:mm:ss`` of a moment in the recording, for a paragraph's time link."""
    return format_length(max(0.0, seconds))


def _breaks(previous: Word, word: Word, count: int) -> bool:
    """True when ``word`` starts a new paragraph of one speaker: a pause or a long one ended."""
    if not previous.text.endswith(_SENTENCE_END):
        return False
    return word.start - previous.end >= PARAGRAPH_PAUSE or count >= PARAGRAPH_WORDS


def _turn_open(word: Word, names: dict[str, str]) -> str:
    """A turn's opening tag, its speaker's name and its time link, which seeks there."""
    at = f"{word.start:.2f}"
    link = f'<a class="at" href="#t={at}" title="Play from here">{clock(word.start)}</a>'
    if word.speaker is None:
        return f'<p class="turn">{link} '
    name = escape(names.get(word.speaker, speakers.default_name(word.speaker)))
    speaker = escape(word.speaker)
    return f'<p class="turn" data-speaker="{speaker}"><span class="speaker">{name}</span> {link} '


def transcript_html(words: Sequence[Word], names: dict[str, str], tokens: Sequence[str]) -> Markup:
    """The words as turns of ``span.w``, each with ``data-i``, ``data-start``, ``data-end``.

    ``tokens`` is what each word shows (``corrections.shown_tokens``: the
    text's own spelling where it lines up with the words), the same token
    the editor sends back and the exports print.

    Built as one string rather than a template loop: a 3-hour recording has
    some 30,000 words and this is the page's whole cost (docs/benchmarks.md).
    Every text is escaped (a word only when it holds ``<>&"'``); the numbers are ours.
    """
    parts: list[str] = []
    previous: Word | None = None
    count = 0
    for index, word in enumerate(words):
        if previous is None or word.speaker != previous.speaker or _breaks(previous, word, count):
            if previous is not None:
                parts.append("</p>\n")
            parts.append(_turn_open(word, names))
            count = 0
        text = tokens[index]
        parts.append(
            _WORD % (index, word.start, word.end, html.escape(text) if _unsafe(text) else text)
        )
        count += 1
        previous = word
    if previous is not None:
        parts.append("</p>")
    return Markup("".join(parts))  # noqa: S704 - every text in it went through escape()


def version(job: Job) -> str:
    """What the page saw of the job, for a form to compare with: its stamp, names and text.

    Not ``updated`` alone: two writes within one tick of the clock would look
    alike. A rename changes the names; a correction changes the text.
    """
    seen = hashlib.sha256()
    seen.update(job.updated.isoformat().encode())
    for speaker in job.speakers:
        seen.update(f"\x00{speaker.id}\x01{speaker.name}".encode())
    seen.update(b"\x02" + (job.text or "").encode())
    return seen.hexdigest()[:32]


async def _page(
    request: Request,
    person: Person,
    job: Job,
    *,
    problem: str | None = None,
    status_code: int = 200,
) -> Response:
    names = speakers.names(job)
    services = runtime_of(request).services
    playable = await _playable(services, job)
    printed = {kept.speaker for kept in job.prints}
    known = (
        await services.voices.list_voices(person.owner_key)
        if services.voices is not None and printed
        else []
    )
    context = {
        # Speakers whose voice was measured: "Remember this voice" is offered beside them.
        "printed": printed,
        "voices": known,
        "job": job,
        "seen": version(job),
        "media_url": media_url(job.id) if playable is not None else None,
        "audio_gone": playable is None and bool(job.file_ids()),
        "speakers_url": f"{recording_url(job.id)}/speakers",
        "transcript": (transcript_html(job.words, names, shown_tokens(job)) if job.words else None),
        "word_count": len(job.words),
        "problem": problem,
        # The Summary panel and the Ask box: only with [llm] (SPEC §27).
        "llm": services.language_model is not None,
        "max_question": MAX_QUESTION_CHARS,
    }
    return render(request, "recording.html", context, person=person, status_code=status_code)


@person_page
async def recording(request: Request, person: Person) -> Response:
    """``GET /w/recordings/{id}``: one of one's recordings with its player; 404 for others."""
    job = await own_job(request, person)
    if job is None:
        return not_found(request, person)
    return await _page(request, person, job)


# -- speakers' names ---------------------------------------------------------------------------


@person_action
async def rename_speaker(request: Request, form: FormData, person: Person) -> Response:
    """``POST /w/recordings/{id}/speakers``: new names, saved only if the job is as the page was.

    The form carries the job's ``version`` as the page showed it: a
    rename or a correction since (in another tab, by another process) makes
    this a 409 that changes nothing, and the page shown then has the current
    names. Between the read here and the write, the store's compare-and-set
    (``save_if_unchanged``) closes the race.
    """
    job = await own_job(request, person)
    if job is None:
        return not_found(request, person)
    if form_text(form, "seen") != version(job):
        return await _changed(request, person, job)
    new = {s.id: form_text(form, s.id) for s in job.speakers if s.id in form}
    try:
        await speakers.rename_speakers(runtime_of(request).services, job, new)
    except speakers.BadSpeakers as exc:
        problem = _("Nothing was renamed: %(reason)s.", reason=exc)
        return await _page(request, person, job, problem=problem, status_code=400)
    except (JobChanged, JobNotFound):
        fresh = await own_job(request, person)
        if fresh is None:
            return not_found(request, person)
        return await _changed(request, person, fresh)
    log.info("workspace.speaker_renamed", extra={"job_id": job.id, "count": len(new)})
    session_of(request).flash(_("Speaker renamed.") if len(new) == 1 else _("Speakers renamed."))
    return Response(status_code=303, headers={"Location": recording_url(job.id) + "#speakers"})


async def _changed(request: Request, person: Person, job: Job) -> Response:
    problem = _(
        "This recording changed since you opened the page (a rename or a correction"
        " elsewhere); nothing was renamed. The names below are the current ones."
    )
    return await _page(request, person, job, problem=problem, status_code=409)


# -- the audio, with HTTP Range ----------------------------------------------------------------


def byte_range(header: str, size: int) -> tuple[int, int] | None:
    """The one range of a ``Range`` header as ``(start, stop)`` within ``size``; None: 416.

    ``bytes=0-99``, ``bytes=100-`` and ``bytes=-500`` (the last 500) are
    understood; a range starting at or past the end, a backward one, several
    ranges or anything else is refused (the caller answers 416).
    """
    matched = _RANGE.fullmatch(header.strip())
    if matched is None:
        return None
    first, last = matched.groups()
    if not first:
        if not last or int(last) == 0 or size == 0:
            return None
        return max(0, size - int(last)), size
    start = int(first)
    stop = size if not last else int(last) + 1
    if start >= size or stop <= start:
        return None
    return start, min(stop, size)


def _candidates(job: Job) -> list[str]:
    """The files the player may play: the converted audio, then the source as received."""
    return [f for f in (job.converted_file_id, job.source_file_id) if f is not None]


async def _playable(services: Services, job: Job) -> FileRecord | None:
    """The first of the job's files that is still recorded, readable here and playable."""
    for file_id in _candidates(job):
        try:
            record = await services.file_records.get_file(file_id)
        except FileNotFound:
            continue
        if record.extension in PLAYABLE and store_for(services, record) is not None:
            return record
    return None


def _gone(request: Request, person: Person) -> Response:
    return render(
        request,
        "message.html",
        {"title": _("No audio"), "text": _("This recording's audio is no longer stored.")},
        person=person,
        status_code=404,
    )


@person_page
async def media(request: Request, person: Person) -> Response:
    """``GET /w/recordings/{id}/media``: the recording's audio, whole (200) or a range (206).

    Streamed from the store a mebibyte at a time, whatever the file's size;
    for S3 the range goes to GetObject, so only it crosses the network.
    """
    job = await own_job(request, person)
    if job is None:
        return not_found(request, person)
    services = runtime_of(request).services
    record = await _playable(services, job)
    store = None if record is None else store_for(services, record)
    if record is None or store is None:
        return _gone(request, person)
    size = record.size
    headers = {"Accept-Ranges": "bytes", "Content-Type": PLAYABLE[record.extension]}
    asked = request.headers.get("range")
    if asked is None:
        start, stop, status = 0, size, 200
    else:
        span = byte_range(asked, size)
        if span is None:
            return PlainTextResponse(
                "The range is not within the recording.\n",
                status_code=416,
                headers={"Content-Range": f"bytes */{size}", "Accept-Ranges": "bytes"},
            )
        (start, stop), status = span, 206
        headers["Content-Range"] = f"bytes {start}-{stop - 1}/{size}"
    headers["Content-Length"] = str(stop - start)
    # A HEAD is answered from the record alone: nothing is read from the store.
    wanted = stop > start and request.method == "GET"
    chunks = store.open_range(record, start=start, stop=stop) if wanted else None
    return await _send(request, person, chunks, status, headers)


async def _send(
    request: Request,
    person: Person,
    chunks: AsyncIterator[bytes] | None,
    status: int,
    headers: dict[str, str],
) -> Response:
    """The answer streaming ``chunks`` (None: no bytes), or 404/503 when the store fails."""
    if chunks is None:
        return Response(b"", status_code=status, headers=headers)
    try:
        # Read the first chunk before answering: gone bytes are a 404, not a 200 cut short.
        first = await anext(chunks, b"")
    except FileNotFound:
        return _gone(request, person)
    except TranscriberError as exc:
        log.warning("workspace.media_failed", extra={"error_type": type(exc).__name__})
        return PlainTextResponse("Storage did not answer; try again.\n", status_code=503)
    return StreamingResponse(replay_first(first, chunks), status_code=status, headers=headers)
