"""The API's routes, declared once (ADR 37): Starlette mounts them, the OpenAPI shows them.

``/health`` and ``/metrics`` are ``web.probes``' own, shared with
``transcriber worker`` (ADR 38).
"""

from __future__ import annotations

import functools
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from transcriber_app.web import openai_api, probes
from transcriber_app.web.api.handlers import (
    delete_job,
    rename_job,
    rename_speakers,
    status,
    transcript,
    upload,
)
from transcriber_app.web.api.summaries import (
    AskAnswer,
    SummaryBody,
    ask,
    get_summary,
    request_summary,
)
from transcriber_app.web.api.voices import (
    VoiceBody,
    VoiceList,
    add_voice_sample,
    create_voice,
    delete_voice,
    list_voices,
    rename_voice,
)
from transcriber_app.web.bodies import Accepted, JobStatus, SpeakerNames, Titled
from transcriber_app.web.endpoints import (
    Answer,
    Endpoint,
    FormField,
    Link,
    Param,
    error,
    json_answer,
)
from transcriber_app.web.endpoints import routes as endpoint_routes
from transcriber_app.web.errors import Error
from transcriber_app.web.intake import (
    INSUFFICIENT_STORAGE,
    LINK_REFUSALS,
    SPEAKERS_FIELD,
    SUMMARY_FIELD,
    SUMMARY_VALUES,
    TITLE_FIELD,
)
from transcriber_app.web.openapi import document as openapi_document
from transcriber_app.web.state import runtime_of
from transcriber_app.web.uploads import URL_FIELD
from transcriber_core.fetching import MAX_LINK_CHARS
from transcriber_core.languages import MAX_PROMPT_CHARS, Task
from transcriber_core.rendering import TranscriptFormat
from transcriber_core.speakers import MAX_NAME_CHARS
from transcriber_core.subtitles import Transcript
from transcriber_core.summaries import MAX_QUESTION_CHARS
from transcriber_core.titles import BAD_TITLE, MAX_TITLE_CHARS


async def openapi(request: Request) -> Response:
    """``GET /api/openapi.json``: the OpenAPI 3.1 document of these routes, as configured."""
    return JSONResponse(api_document(tokens=bool(runtime_of(request).config.http.api_tokens)))


@functools.cache
def api_document(*, tokens: bool) -> dict[str, Any]:
    """The OpenAPI document of ``all_endpoints``; ``tokens``: ``[http] api_tokens`` is set."""
    return openapi_document(all_endpoints(), tokens=tokens)


#: A job's id in a path.
JOB_ID = Param(name="job_id", where="path", description="the id ``POST /api/audio`` answered")
#: 404 of a route with a job id: an unknown id, or a path the router does not match.
JOB_NOT_FOUND = error(
    404, "job_not_found", "not_found", description="no job has this id, or another token sent it"
)
#: 503 of a route whose store or database did not answer.
UNAVAILABLE = error(503, "unavailable", description="the database or store did not answer")

#: A voice's id in a path.
VOICE_ID = Param(name="voice_id", where="path", description="the id ``POST /api/voices`` answered")
#: 404 of a route with a voice id.
VOICE_NOT_FOUND = error(
    404, "voice_not_found", "not_found", description="no voice of the caller's has this id"
)
#: 401 of the voices routes: a voice belongs to a token or a person, on an open API too.
VOICES_UNAUTHORIZED = Answer(
    status=401,
    description="no bearer token: voices belong to a token or a person (ADR 72)",
    content={"application/json": Error},
    headers={"WWW-Authenticate": "Bearer"},
    codes=("unauthorized",),
)
#: A recording's speaker named in a voices body.
_SPEAKER_OF = {
    "job_id": {"type": "string", "description": "one of the caller's done recordings"},
    "speaker": {
        "type": "string",
        "pattern": "^S([1-9]|10)$",
        "description": "one of its speakers (S1, S2, ...)",
    },
}
#: 400 and 409 of a recording's speaker that cannot give a voice.
_SPEAKER_REFUSALS = (
    error(
        400,
        "bad_request",
        "no_speakers",
        "bad_speaker",
        "bad_name",
        description=(
            "the body is not the JSON object wanted, the recording's speakers were not labelled,"
            " the speaker is not one of them (or was not measured), or the name is refused"
        ),
    ),
    JOB_NOT_FOUND,
    error(409, "not_done", description="the recording is not transcribed yet"),
)
#: The name of a voice, as a speaker's (SPEC §18).
_NAME = {
    "type": "string",
    "minLength": 1,
    "maxLength": MAX_NAME_CHARS,
    "description": "1 to 64 characters without control or format characters",
}

#: 404 of the summary and question routes without ``[llm]``, or of an unknown job.
LLM_NOT_FOUND = error(
    404,
    "llm_unavailable",
    "job_not_found",
    "not_found",
    description="no [llm] is configured here, or no job of the caller's has this id",
)
#: 409 of a summary or a question before the recording is transcribed.
NOT_DONE = error(409, "not_done", description="the recording is not transcribed yet")
#: The summary and question routes (SPEC §27).
SUMMARY_ENDPOINTS = (
    Endpoint(
        method="POST",
        path="/api/jobs/{job_id}/summary",
        handler=request_summary,
        summary="Queue the summary of a done recording (again: a stale one is rebuilt)",
        secured=True,
        parameters=(JOB_ID,),
        answers=(
            json_answer(202, SummaryBody, "queued: pending until a worker has built it"),
            LLM_NOT_FOUND,
            NOT_DONE,
            UNAVAILABLE,
        ),
    ),
    Endpoint(
        method="GET",
        path="/api/jobs/{job_id}/summary",
        handler=get_summary,
        summary="A recording's summary: a paragraph, key points and action items with who",
        secured=True,
        parameters=(JOB_ID,),
        answers=(
            json_answer(200, SummaryBody, "the summary in its state: pending, done or failed"),
            error(
                404,
                "llm_unavailable",
                "job_not_found",
                "summary_not_found",
                "not_found",
                description=(
                    "no [llm] is configured here, no job of the caller's has this id,"
                    " or no summary was ever asked for it"
                ),
            ),
            UNAVAILABLE,
        ),
    ),
    Endpoint(
        method="POST",
        path="/api/jobs/{job_id}/ask",
        handler=ask,
        summary="Ask a question about a done recording, answered from its transcript only",
        secured=True,
        parameters=(JOB_ID,),
        json_body={
            "type": "object",
            "required": ["question"],
            "properties": {
                "question": {"type": "string", "minLength": 1, "maxLength": MAX_QUESTION_CHARS}
            },
        },
        answers=(
            json_answer(200, AskAnswer, "the answer and the transcript's moments it rests on"),
            error(400, "bad_question", description="not a JSON object with a question"),
            LLM_NOT_FOUND,
            NOT_DONE,
            error(413, "too_large", description="the body is over 8 KiB"),
            error(
                429,
                "too_many_questions",
                description=(
                    "the recording's owner asked 10 questions at once, or more than one every"
                    " 30 s since (ADR 94); ask again after Retry-After"
                ),
                headers={"Retry-After": "seconds until a question may be asked"},
            ),
            error(
                502,
                "model_refused",
                description="the model's server refused the request (its key, model or URL)",
            ),
            error(
                503,
                "model_unavailable",
                "unavailable",
                description="the model's server did not answer now; ask again later",
                headers={"Retry-After": "seconds to wait"},
            ),
        ),
    ),
)

#: The form fields of what a sender asks of the recognition (SPEC §18).
RECOGNITION_FIELDS = (
    FormField(
        name="language",
        description=(
            "auto (the default) or an ISO 639-1 code the recognizer knows; "
            "400 bad_language names the accepted values"
        ),
        schema={"type": "string", "maxLength": 16},
    ),
    FormField(
        name="prompt",
        description="text that primes Whisper (names, vocabulary); other recognizers ignore it",
        schema={"type": "string", "maxLength": MAX_PROMPT_CHARS},
    ),
    FormField(
        name="task",
        description="transcribe (the default), or translate to English where the recognizer can",
        schema={"type": "string", "enum": [str(task) for task in Task]},
    ),
)
#: The codes of a link refused at intake (SPEC §28).
LINK_CODES = (*LINK_REFUSALS, "url_unreachable")
#: What a recording's title may be (SPEC §26, ADR 79).
TITLE_TEXT = (
    "the recording's name, up to 200 characters, without control characters, trimmed;"
    " empty: none, and it is shown as its dated default"
)

#: The codes of a refused recognition field.
REQUEST_CODES = ("bad_language", "bad_prompt", "bad_task", "translation_unsupported")

#: Every route of the API, declared once: Starlette mounts these and the document shows them.
ENDPOINTS: tuple[Endpoint, ...] = (
    Endpoint(
        method="POST",
        path="/api/audio",
        handler=upload,
        summary="Send a recording; answers with the job that will transcribe it",
        secured=True,
        parameters=(
            Param(
                name="Idempotency-Key",
                where="header",
                description="a retry with the same key and file gets the first job back",
                schema={"type": "string", "pattern": "^[!-~]{1,255}$"},
            ),
        ),
        form=(
            FormField(
                name="file",
                description=(
                    "the recording (audio or video); only its name's extension is kept."
                    " Send this or url, not both"
                ),
                schema={"type": "string", "format": "binary", "minLength": 1},
                either=URL_FIELD,
                content_type="application/octet-stream",
            ),
            FormField(
                name=URL_FIELD,
                description=(
                    "instead of file: an http(s) link to the recording, a direct media file or a"
                    " page with one (SPEC §28); fetched by the job's fetch step, at most"
                    " [import] max_bytes, public addresses only; never logged"
                ),
                schema={"type": "string", "format": "uri", "maxLength": MAX_LINK_CHARS},
            ),
            FormField(
                name="callback_url",
                description=(
                    "an http(s) URL POSTed a signed {job_id, state, error} when the job ends"
                    " (needs [webhooks] secret; loopback and private addresses are refused)"
                ),
                schema={"type": "string", "format": "uri", "maxLength": 2048},
            ),
            FormField(
                name=SPEAKERS_FIELD,
                description=(
                    "label who speaks: auto (find how many), 1 to 10 (exactly that many) or off;"
                    " default [diarization] default"
                ),
                schema={"type": "string", "pattern": "^(auto|off|[1-9]|10)$"},
            ),
            FormField(
                name=SUMMARY_FIELD,
                description=(
                    "true: summarise the recording once it is done (SPEC §27); default"
                    " [llm] auto_summary; ignored without [llm]"
                ),
                schema={"type": "string", "enum": sorted(SUMMARY_VALUES)},
            ),
            *RECOGNITION_FIELDS,
            FormField(
                name=TITLE_FIELD,
                description=TITLE_TEXT,
                schema={"type": "string", "maxLength": MAX_TITLE_CHARS},
            ),
        ),
        answers=(
            json_answer(
                202,
                Accepted,
                "the job was made, or the first one is given back for a known Idempotency-Key",
                headers={
                    "Location": "where to poll the job: /api/status/<job_id>",
                    "Idempotent-Replayed": "true when the answer is a known key's first job",
                },
                links={"status": Link("status", {"job_id": "$response.body#/job_id"})},
            ),
            error(
                400,
                "bad_request",
                "bad_multipart",
                "missing_file",
                "empty_file",
                "file_and_url",
                *LINK_CODES,
                "bad_idempotency_key",
                "webhooks_disabled",
                "bad_callback_url",
                "callback_address_refused",
                "bad_speakers",
                "bad_summary",
                *REQUEST_CODES,
                BAD_TITLE,
                description=(
                    "the form, the link, the Idempotency-Key, the callback_url, the language,"
                    " the prompt, the task, the speakers, the title or the summary cannot be used"
                ),
            ),
            error(
                408,
                "upload_timeout",
                description="no byte for the inactivity timeout, or the body late for its deadline",
            ),
            error(
                413,
                "too_large",
                "form_too_large",
                description="the recording, or the form's other fields, passed their limit",
            ),
            error(415, "not_multipart", description="the body is not multipart/form-data"),
            error(
                422,
                "idempotency_key_reused",
                description="the Idempotency-Key was first used with a different file",
            ),
            error(
                429,
                "quota_exceeded",
                description=(
                    "the caller's [quotas] seconds_per_day is spent, or this recording is longer"
                    " than what is left; resets is the next UTC midnight (ADR 59)"
                ),
                headers={"Retry-After": "seconds until the quota resets"},
            ),
            UNAVAILABLE,
            error(
                507,
                INSUFFICIENT_STORAGE,
                description="the service is short of disk space",
                headers={"Retry-After": "seconds to wait before sending again"},
            ),
        ),
    ),
    Endpoint(
        method="GET",
        path="/api/status/{job_id}",
        handler=status,
        summary="A job's state and, once done, its transcript",
        secured=True,
        parameters=(JOB_ID,),
        answers=(json_answer(200, JobStatus, "the job"), JOB_NOT_FOUND, UNAVAILABLE),
    ),
    Endpoint(
        method="GET",
        path="/api/jobs/{job_id}/transcript",
        handler=transcript,
        summary="A done job's transcript as text, subtitles (SRT, WebVTT) or timed JSON",
        secured=True,
        parameters=(
            JOB_ID,
            Param(
                name="format",
                where="query",
                description="txt (the default), srt, vtt or json",
                schema={"type": "string", "enum": [str(f) for f in TranscriptFormat]},
            ),
        ),
        answers=(
            Answer(
                status=200,
                description=(
                    "the transcript, as an attachment named by the recording's title"
                    " (RFC 6266: filename* in UTF-8, an ASCII filename, the job id when the"
                    " title is not ASCII)"
                ),
                content={
                    "text/plain": None,
                    "application/x-subrip": None,
                    "text/vtt": None,
                    "application/json": Transcript,
                },
                headers={
                    "Content-Disposition": (
                        'attachment; filename="<ascii>.<format>";'
                        " filename*=UTF-8''<title>.<format>"
                    )
                },
            ),
            error(400, "bad_format", description="format names none of txt, srt, vtt, json"),
            JOB_NOT_FOUND,
            error(
                409,
                "not_done",
                "failed",
                "dead",
                description="no transcript: not done yet, or failed or dead (the reason)",
            ),
            UNAVAILABLE,
        ),
    ),
    Endpoint(
        method="DELETE",
        path="/api/jobs/{job_id}",
        handler=delete_job,
        summary="Delete a job with its transcript and every file it holds",
        secured=True,
        parameters=(JOB_ID,),
        answers=(
            Answer(status=204, description="the job and everything it held are gone"),
            JOB_NOT_FOUND,
            UNAVAILABLE,
        ),
    ),
    Endpoint(
        method="PATCH",
        path="/api/jobs/{job_id}",
        handler=rename_job,
        summary="Rename a recording: set its title, or take it away with null",
        secured=True,
        parameters=(JOB_ID,),
        json_body={
            "type": "object",
            "required": ["title"],
            "additionalProperties": False,
            "properties": {
                "title": {
                    "type": ["string", "null"],
                    "maxLength": MAX_TITLE_CHARS,
                    "description": TITLE_TEXT + "; null: none",
                }
            },
        },
        answers=(
            json_answer(200, Titled, "the recording's title now"),
            error(
                400,
                BAD_TITLE,
                description=(
                    'not {"title": …}, or the title is too long or holds control characters'
                ),
            ),
            JOB_NOT_FOUND,
            error(413, "too_large", description="the body is over 4 KiB"),
            UNAVAILABLE,
        ),
    ),
    Endpoint(
        method="PATCH",
        path="/api/jobs/{job_id}/speakers",
        handler=rename_speakers,
        summary="Rename a job's speakers; every format shows the new names",
        secured=True,
        parameters=(JOB_ID,),
        json_body={
            "type": "object",
            "description": (
                'speaker id → new name, as {"S1": "Diane"}: ids the job has, names of 1 to 64'
                " characters without control or format characters"
            ),
            "minProperties": 1,
            "propertyNames": {"pattern": "^S([1-9]|10)$"},
            "additionalProperties": {
                "type": "string",
                "minLength": 1,
                "maxLength": MAX_NAME_CHARS,
            },
        },
        answers=(
            json_answer(200, SpeakerNames, "the job's speakers with their names now"),
            error(
                400,
                "bad_speakers",
                description="not an object of names, an unknown speaker, or a name refused",
            ),
            JOB_NOT_FOUND,
            error(409, "job_changed", description="the job kept changing while it was renamed"),
            error(413, "too_large", description="the body is over 16 KiB"),
            UNAVAILABLE,
        ),
    ),
    Endpoint(
        method="POST",
        path="/api/voices",
        handler=create_voice,
        summary="Remember a recording's speaker as a named voice; new recordings name it",
        secured=True,
        unauthorized=VOICES_UNAUTHORIZED,
        json_body={
            "type": "object",
            "required": ["job_id", "speaker", "name"],
            "properties": {**_SPEAKER_OF, "name": _NAME},
        },
        answers=(
            json_answer(201, VoiceBody, "the voice, with one sample"),
            VOICES_UNAUTHORIZED,
            *_SPEAKER_REFUSALS,
            error(413, "too_large", description="the body is over 4 KiB"),
            UNAVAILABLE,
        ),
    ),
    Endpoint(
        method="GET",
        path="/api/voices",
        handler=list_voices,
        summary="The caller's remembered voices (never their prints)",
        secured=True,
        unauthorized=VOICES_UNAUTHORIZED,
        answers=(
            json_answer(200, VoiceList, "the caller's voices, oldest first"),
            VOICES_UNAUTHORIZED,
            UNAVAILABLE,
        ),
    ),
    Endpoint(
        method="POST",
        path="/api/voices/{voice_id}/samples",
        handler=add_voice_sample,
        summary="Add another recording's speaker to a voice",
        secured=True,
        unauthorized=VOICES_UNAUTHORIZED,
        parameters=(VOICE_ID,),
        json_body={
            "type": "object",
            "required": ["job_id", "speaker"],
            "properties": _SPEAKER_OF,
        },
        answers=(
            json_answer(200, VoiceBody, "the voice, with one more sample"),
            VOICES_UNAUTHORIZED,
            *_SPEAKER_REFUSALS[:1],
            error(
                404,
                "job_not_found",
                "voice_not_found",
                "not_found",
                description="no recording or no voice of the caller's has this id",
            ),
            *_SPEAKER_REFUSALS[2:],
            error(413, "too_large", description="the body is over 4 KiB"),
            UNAVAILABLE,
        ),
    ),
    Endpoint(
        method="PATCH",
        path="/api/voices/{voice_id}",
        handler=rename_voice,
        summary="Rename a voice; recordings already named keep their names",
        secured=True,
        unauthorized=VOICES_UNAUTHORIZED,
        parameters=(VOICE_ID,),
        json_body={"type": "object", "required": ["name"], "properties": {"name": _NAME}},
        answers=(
            json_answer(200, VoiceBody, "the voice with its new name"),
            VOICES_UNAUTHORIZED,
            error(
                400,
                "bad_request",
                "bad_name",
                description="not a JSON object with a name, or the name is refused",
            ),
            VOICE_NOT_FOUND,
            error(413, "too_large", description="the body is over 4 KiB"),
            UNAVAILABLE,
        ),
    ),
    Endpoint(
        method="DELETE",
        path="/api/voices/{voice_id}",
        handler=delete_voice,
        summary="Forget a voice: it and its print are deleted",
        secured=True,
        unauthorized=VOICES_UNAUTHORIZED,
        parameters=(VOICE_ID,),
        answers=(
            Answer(status=204, description="the voice and its print are gone"),
            VOICES_UNAUTHORIZED,
            VOICE_NOT_FOUND,
            UNAVAILABLE,
        ),
    ),
    Endpoint(
        method="GET",
        path="/api/openapi.json",
        handler=openapi,
        summary="This document",
        answers=(
            json_answer(
                200,
                {"type": "object", "required": ["openapi", "info", "paths"]},
                "the OpenAPI 3.1 document of the API",
            ),
        ),
    ),
    *probes.ENDPOINTS,
)


def all_endpoints() -> tuple[Endpoint, ...]:
    """``ENDPOINTS`` and the OpenAI-compatible ``/v1`` routes (ADR 46)."""
    return (*ENDPOINTS, *SUMMARY_ENDPOINTS, *openai_api.ENDPOINTS)


def routes() -> list[Route]:
    """The API's routes, from ``all_endpoints``."""
    return endpoint_routes(all_endpoints())
