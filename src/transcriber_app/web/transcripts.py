"""A done job's transcript as a download in one of four formats (ADR 34).

One answer for the API (``GET /api/jobs/{id}/transcript``) and the admin
panel's links: the body from the core's one renderer (``transcriber_core.rendering``),
its content type, and a ``Content-Disposition`` whose file name is the
recording's title (RFC 6266 ``filename*``, with an ASCII ``filename`` for old
clients), never what the sender called the file (SPEC §26, ADR 79).
"""

from __future__ import annotations

import re
from urllib.parse import quote

from starlette.concurrency import run_in_threadpool
from starlette.responses import Response

from transcriber_app.web.language import _
from transcriber_core.entities import Job, State
from transcriber_core.rendering import TranscriptFormat, render
from transcriber_core.titles import shown_title

#: The default when ``format`` is not given.
DEFAULT_FORMAT = TranscriptFormat.TXT
#: Content type of each format; JSON is UTF-8 by definition and takes no charset.
MEDIA_TYPES: dict[TranscriptFormat, str] = {
    TranscriptFormat.TXT: "text/plain; charset=utf-8",
    TranscriptFormat.SRT: "application/x-subrip; charset=utf-8",
    TranscriptFormat.VTT: "text/vtt; charset=utf-8",
    TranscriptFormat.JSON: "application/json",
}
#: The allowed values, as the refusal of an unknown one names them.
ALLOWED = ", ".join(TranscriptFormat)


def transcript_format(value: str | None) -> TranscriptFormat | None:
    """The format ``value`` names; the default when absent; None when it names none."""
    if value is None:
        return DEFAULT_FORMAT
    try:
        return TranscriptFormat(value)
    except ValueError:
        return None


#: What no file name of any system takes, and a quoted header value must not hold.
_UNSAFE_IN_NAME = re.compile(r'[\\/:*?"<>|]')
#: Printable ASCII: what a ``filename="…"`` parameter carries as it is.
_PRINTABLE_ASCII = re.compile(r"[ -~]+")


def download_name(job: Job, wanted: TranscriptFormat) -> str:
    """``<title>.<format>``: the recording's title or its dated default, fit for any file system."""
    name = _UNSAFE_IN_NAME.sub("_", shown_title(job.title, job.created)).strip(" .")
    return f"{name or job.id}.{wanted.value}"


def content_disposition(job: Job, wanted: TranscriptFormat) -> str:
    """An attachment named by ``download_name`` (RFC 6266): UTF-8 ``filename*``, ASCII ``filename``.

    A title in ASCII is the fallback too; any other falls back to the job's id.
    """
    name = download_name(job, wanted)
    fallback = name
    if not _PRINTABLE_ASCII.fullmatch(name):
        fallback = re.sub(r"[^A-Za-z0-9_-]", "_", job.id) + f".{wanted.value}"
    return f"attachment; filename=\"{fallback}\"; filename*=UTF-8''{quote(name, safe='')}"


async def transcript_response(job: Job, wanted: TranscriptFormat) -> Response:
    """The transcript of the done ``job`` in ``wanted``, as an attachment named by its title.

    Rendered in a worker thread: hours of words take a noticeable moment
    (``bench/subtitles.py``) that the event loop must not wait through.
    """
    body = await run_in_threadpool(render, job, wanted)
    return Response(
        body,
        media_type=MEDIA_TYPES[wanted],
        headers={"Content-Disposition": content_disposition(job, wanted)},
    )


def why_no_transcript(job: Job) -> str:
    """``no_transcript``'s reason as a page says it, in the request's language: a sentence."""
    reason = job.error or _("no reason given")
    if job.state is State.FAILED:
        return _("The job failed and has no transcript: %(reason)s.", reason=reason)
    if job.state is State.DEAD:
        return _(
            "The job gave up after its retries and has no transcript: %(reason)s.", reason=reason
        )
    return _("The job is not done yet; its transcript comes when it is.")


def no_transcript(job: Job) -> tuple[str, str]:
    """The code and sentence of a 409 for a job that has no transcript to give, and why.

    ``not_done`` while it is on its way; ``failed`` or ``dead`` when it ended
    without one, with the reason the sender may read (the job's error, as
    ``GET /api/status`` shows it in a terminal state).
    """
    if job.state is State.FAILED:
        return "failed", f"the job failed and has no transcript: {job.error or 'no reason given'}"
    if job.state is State.DEAD:
        reason = job.error or "no reason given"
        return "dead", f"the job gave up after its retries and has no transcript: {reason}"
    return "not_done", "the job is not done yet; its transcript comes when it is"
