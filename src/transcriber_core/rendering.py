"""A done job's transcript in every shape it is sent in: the one renderer (SPEC §15, §19, §28).

``render`` gives the four formats of ``/api``, the workspace's downloads,
the admin panel's links and the bot's buttons (txt, SRT, WebVTT, the JSON
document); ``openai_answer`` gives the shapes of OpenAI's audio API for
``/v1`` (json, text, srt, vtt, verbose_json, diarized_json). Both build on
``subtitles``' cues and show each speaker by the name the job gives it
(renames included). Doors add only what their protocol wraps around a
body: a content type, a file name, a response.
"""

from __future__ import annotations

import enum
import json
import math
from typing import Any, Literal

import attrs
import cattrs

from transcriber_core import subtitles
from transcriber_core.entities import Job
from transcriber_core.languages import Task
from transcriber_core.speakers import names


class TranscriptFormat(enum.StrEnum):
    """The formats of ``/api``, the pages and the bot."""

    TXT = "txt"
    SRT = "srt"
    VTT = "vtt"
    JSON = "json"


class ResponseFormat(enum.StrEnum):
    """What ``response_format`` may ask for on ``/v1`` (OpenAI's names)."""

    JSON = "json"
    TEXT = "text"
    SRT = "srt"
    VERBOSE_JSON = "verbose_json"
    VTT = "vtt"
    DIARIZED_JSON = "diarized_json"


def _doc(text: str) -> dict[str, str]:
    """Field metadata read as its description by the API's document (``web.schemas.doc``)."""
    return {"description": text}


def render(job: Job, wanted: TranscriptFormat, *, corrected: bool | None = None) -> bytes:
    """The body of the done ``job``'s transcript in ``wanted``, UTF-8.

    ``corrected`` (the workspace's downloads) adds to the JSON document
    whether the text is a person's correction; None leaves it out.
    """
    text = job.text or ""
    shown = names(job)
    if wanted is TranscriptFormat.JSON:
        document = _without_speakers_unset(cattrs.unstructure(subtitles.transcript(job)))
        if corrected is not None:
            document["corrected"] = corrected
        # As Starlette's JSONResponse writes JSON: compact, UTF-8, no NaN.
        return json.dumps(
            document, ensure_ascii=False, allow_nan=False, separators=(",", ":")
        ).encode()
    if wanted is TranscriptFormat.TXT:
        return subtitles.plain_text(job.words, text=text, names=shown).encode()
    cues = subtitles.cues(job.words, text=text, duration=job.duration)
    if wanted is TranscriptFormat.SRT:
        return subtitles.srt(cues, shown).encode()
    return subtitles.webvtt(cues, shown).encode()


def _without_speakers_unset(document: dict[str, Any]) -> dict[str, Any]:
    """The JSON document with ``speaker`` and ``speakers`` left out where labelling was off.

    A speaker carries ``voice_id`` only when it was matched with a remembered voice.
    """
    if not document.get("speakers"):
        document.pop("speakers", None)
    for speaker in document.get("speakers", ()):
        if speaker.get("voice_id") is None:
            speaker.pop("voice_id", None)
    for key in ("words", "segments"):
        for item in document.get(key, ()):
            if item.get("speaker") is None:
                item.pop("speaker", None)
    return document


@attrs.frozen(kw_only=True)
class Usage:
    """What the request used: seconds of audio, as OpenAI bills ``whisper-1``."""

    type: Literal["duration"] = attrs.field(metadata=_doc("always duration"))
    seconds: int = attrs.field(metadata=_doc("seconds of audio, rounded up"))


@attrs.frozen(kw_only=True)
class Transcription:
    """The ``json`` answer."""

    text: str
    usage: Usage


@attrs.frozen(kw_only=True)
class TranscriptionSegment:
    """A segment of ``verbose_json``: one of the service's cues (ADR 46 on the decoder's fields)."""

    id: int
    seek: int = attrs.field(metadata=_doc("the segment's start in hundredths of a second"))
    start: float
    end: float
    text: str
    tokens: tuple[int, ...] = attrs.field(metadata=_doc("always empty: tokens are not kept"))
    temperature: float = attrs.field(metadata=_doc("always 0"))
    avg_logprob: float = attrs.field(metadata=_doc("always 0: not kept"))
    compression_ratio: float = attrs.field(metadata=_doc("always 1: not kept"))
    no_speech_prob: float = attrs.field(metadata=_doc("always 0: not kept"))


@attrs.frozen(kw_only=True)
class TranscriptionVerbose:
    """The ``verbose_json`` answer."""

    task: Task
    language: str = attrs.field(metadata=_doc("ISO 639-1 code heard (or asked); empty: unknown"))
    duration: float
    text: str
    usage: Usage
    segments: tuple[TranscriptionSegment, ...] | None = None
    #: ``{word, start, end}``: the same words as the ``/api`` transcript's JSON.
    words: tuple[subtitles.TimedWord, ...] | None = None


@attrs.frozen(kw_only=True)
class TranscriptionDiarizedSegment:
    """A segment of ``diarized_json``: one of the service's cues, which never mixes two speakers."""

    type: Literal["transcript.text.segment"] = attrs.field(
        metadata=_doc("always transcript.text.segment")
    )
    id: str = attrs.field(metadata=_doc("the segment's id within this answer: seg_0, seg_1…"))
    start: float
    end: float
    text: str
    speaker: str = attrs.field(
        metadata=_doc(
            "the speaker's name (Speaker 1…, or the name given with PATCH /api/jobs/{id}/speakers);"
            " empty for a segment no speaker was told in"
        )
    )


@attrs.frozen(kw_only=True)
class TranscriptionDiarized:
    """The ``diarized_json`` answer: the text and its segments, each with its speaker."""

    task: Literal["transcribe"] = attrs.field(metadata=_doc("always transcribe"))
    duration: float
    text: str
    segments: tuple[TranscriptionDiarizedSegment, ...]
    usage: Usage


#: A ``/v1`` answer: a JSON document, or the plain body of ``text``, ``srt`` and ``vtt``.
OpenAIAnswer = Transcription | TranscriptionVerbose | TranscriptionDiarized | bytes


def usage_of(job: Job) -> Usage:
    """Seconds of audio, rounded up, as OpenAI bills them."""
    return Usage(type="duration", seconds=math.ceil(max(job.duration or 0.0, 0.0)))


def openai_answer(
    job: Job, wanted: ResponseFormat, *, words: bool = False, segments: bool = True
) -> OpenAIAnswer:
    """The done ``job`` as OpenAI's ``wanted`` shape; ``words`` and ``segments`` for verbose_json.

    ``text`` is the transcript's text as recognised (no speaker turns, as
    OpenAI sends it); ``srt`` and ``vtt`` are ``render``'s.
    """
    if wanted is ResponseFormat.JSON:
        return Transcription(text=job.text or "", usage=usage_of(job))
    if wanted is ResponseFormat.VERBOSE_JSON:
        return verbose(job, words=words, segments=segments)
    if wanted is ResponseFormat.DIARIZED_JSON:
        return diarized(job)
    if wanted is ResponseFormat.TEXT:
        return (job.text or "").encode()
    return render(
        job, TranscriptFormat.SRT if wanted is ResponseFormat.SRT else TranscriptFormat.VTT
    )


def diarized(job: Job) -> TranscriptionDiarized:
    """The ``diarized_json`` document: the cues as segments, each with its speaker's name."""
    document = subtitles.transcript(job)
    shown = names(job)
    found = tuple(
        TranscriptionDiarizedSegment(
            type="transcript.text.segment",
            id=f"seg_{index}",
            start=segment.start,
            end=segment.end,
            text=segment.text,
            speaker="" if segment.speaker is None else shown.get(segment.speaker, segment.speaker),
        )
        for index, segment in enumerate(document.segments)
    )
    return TranscriptionDiarized(
        task="transcribe",
        duration=job.duration or 0.0,
        text=document.text,
        segments=found,
        usage=usage_of(job),
    )


def verbose(job: Job, *, words: bool, segments: bool) -> TranscriptionVerbose:
    """The ``verbose_json`` document: segments are the cues, words only when asked."""
    document = subtitles.transcript(job)
    shown = None
    if segments:
        shown = tuple(
            TranscriptionSegment(
                id=index,
                seek=round(segment.start * 100),
                start=segment.start,
                end=segment.end,
                text=segment.text,
                tokens=(),
                temperature=0.0,
                avg_logprob=0.0,
                compression_ratio=1.0,
                no_speech_prob=0.0,
            )
            for index, segment in enumerate(document.segments)
        )
    return TranscriptionVerbose(
        task=job.task,
        language=job.language or job.language_requested or "",
        duration=job.duration or 0.0,
        text=document.text,
        usage=usage_of(job),
        segments=shown,
        words=document.words if words else None,
    )
