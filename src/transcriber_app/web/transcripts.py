"""A done job's transcript as a download in one of four formats (ADR 34).

One answer for the API (``GET /api/jobs/{id}/transcript``) and the admin
panel's links: the body from the core's rules (``transcriber_core.subtitles``),
its content type, and a ``Content-Disposition`` whose file name is made
from the job id alone, never from what the sender called the recording.
"""

from __future__ import annotations

import enum
import re

import cattrs
from starlette.responses import JSONResponse, Response

from transcriber_core import subtitles
from transcriber_core.entities import Job


class TranscriptFormat(enum.StrEnum):
    """What ``?format=`` may ask for."""

    TXT = "txt"
    SRT = "srt"
    VTT = "vtt"
    JSON = "json"


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


def download_name(job: Job, wanted: TranscriptFormat) -> str:
    """``<job id>.<format>``, with anything a header could choke on replaced."""
    return re.sub(r"[^A-Za-z0-9_-]", "_", job.id) + f".{wanted.value}"


def transcript_response(job: Job, wanted: TranscriptFormat) -> Response:
    """The transcript of the done ``job`` in ``wanted``, as an attachment named by its id."""
    headers = {"Content-Disposition": f'attachment; filename="{download_name(job, wanted)}"'}
    if wanted is TranscriptFormat.JSON:
        return JSONResponse(cattrs.unstructure(subtitles.transcript(job)), headers=headers)
    text = job.text or ""
    if wanted is TranscriptFormat.TXT:
        body = f"{text}\n" if text else ""
    else:
        cues = subtitles.cues(job.words, text=text, duration=job.duration)
        body = subtitles.srt(cues) if wanted is TranscriptFormat.SRT else subtitles.webvtt(cues)
    return Response(body, media_type=MEDIA_TYPES[wanted], headers=headers)
