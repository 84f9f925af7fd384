"""The OpenAI-compatible API (SPEC §19, ADR 46): ``/v1/audio/transcriptions``, translations, models.

A request is a job like any other: the upload goes through the one way in
as ``POST /api/audio``'s does (``web.intake``; same token, limits,
Idempotency-Key, owner, lane),
then the answer waits for the job's end (``transcriber_core.waiting``: woken
by this process's worker or, on PostgreSQL, by another's ``NOTIFY``) up to
``[openai] wait_seconds``, and renders it as OpenAI would. A client that
goes away leaves the job running; its result stays in ``/api``. Every
answer carries ``Transcriber-Job-Id`` once the job exists, and errors take
OpenAI's shape (``web.openai_errors``).
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
from collections.abc import AsyncIterator, Callable, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

import attrs
from starlette.concurrency import run_in_threadpool
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response, StreamingResponse

from transcriber_app.bootstrap import Runtime
from transcriber_app.config import Config
from transcriber_app.web.api.auth import require_token
from transcriber_app.web.api.handlers import refuse_before_body
from transcriber_app.web.endpoints import Answer, Endpoint, FormField, Param, json_answer
from transcriber_app.web.errors import ApiError
from transcriber_app.web.intake import FormDoor, refusal
from transcriber_app.web.openai_errors import (
    OpenAIError,
    OpenAIFault,
    openai_error_response,
)
from transcriber_app.web.probes import metrics_of
from transcriber_app.web.schemas import doc, to_json
from transcriber_app.web.state import runtime_of
from transcriber_app.web.uploads import CLOSE, Received
from transcriber_core import subtitles
from transcriber_core.entities import AUTO_SPEAKERS, Job, JobPart, Origin, State
from transcriber_core.errors import (
    DedupKeyReused,
    DiskFull,
    JobNotFound,
    OptionRefused,
    TranscriberError,
)
from transcriber_core.intake import take_in
from transcriber_core.languages import MAX_PROMPT_CHARS, Task
from transcriber_core.ports import Proof, Sender, Wishes
from transcriber_core.rendering import (
    ResponseFormat,
    Transcription,
    TranscriptionDiarized,
    TranscriptionVerbose,
    openai_answer,
    usage_of,
)
from transcriber_core.speakers import BadSpeakers, labels_speakers, parse_wanted, wanted_text
from transcriber_core.waiting import watch_job

log = logging.getLogger("transcriber.openai")

#: The header naming the job behind an answer: its result stays readable in ``/api``.
JOB_HEADER = "Transcriber-Job-Id"
#: The model id every OpenAI client knows; it means the configured recognizer.
WHISPER_ALIAS = "whisper-1"
#: A stream says it is alive this often while its job waits (proxies cut silent streams).
KEEPALIVE_SECONDS = 15.0


#: The granularities ``timestamp_granularities[]`` may name.
GRANULARITIES = ("word", "segment")
#: ``POST /api/audio``'s fields that OpenAI's API has not. Refused with 400 (ADR 68): each
#: would be ignored here, and its sender would wait for what it asks (a webhook that never
#: comes, speakers never labelled, a translation never made, a title never kept, a summary
#: never made). Other fields OpenAI does not document are still ignored, as new ones of
#: OpenAI's would be.
API_ONLY_FIELDS = ("callback_url", "speakers", "task", "title", "summary", "url")
#: Media type of each plain answer.
_PLAIN_TYPES = {
    ResponseFormat.TEXT: "text/plain; charset=utf-8",
    ResponseFormat.SRT: "application/x-subrip; charset=utf-8",
    ResponseFormat.VTT: "text/vtt; charset=utf-8",
}


@attrs.frozen(kw_only=True)
class Ask:
    """A ``/v1`` audio request's fields: OpenAI's checked, what they ask of the job as sent."""

    #: ``language`` as sent (None for a translation: Whisper's translate hears any language).
    language: str | None = None
    #: ``prompt`` as sent.
    prompt: str | None = None
    task: Task = Task.TRANSCRIBE
    response_format: ResponseFormat = ResponseFormat.JSON
    #: ``verbose_json`` carries words (asked with ``timestamp_granularities[]=word``).
    words: bool = False
    #: ``verbose_json`` carries segments (the default granularity, or asked).
    segments: bool = True
    stream: bool = False
    #: Speakers the job wants (``Job.speakers_wanted``): auto for ``diarized_json``, else the
    #: ``[diarization] default`` when speakers can be labelled, else None (off).
    speakers: int | None = None

    @property
    def wishes(self) -> Wishes:
        """What the request asks of its job, for the one way in to judge."""
        return Wishes(
            language=self.language,
            prompt=self.prompt,
            task=self.task.value,
            speakers=wanted_text(self.speakers),
        )


@attrs.frozen(kw_only=True)
class Model:
    """A model ``model`` may name."""

    id: str
    object: Literal["model"]
    created: int = attrs.field(metadata=doc("always 0: unknown"))
    owned_by: str


@attrs.frozen(kw_only=True)
class ModelList:
    """``GET /v1/models``."""

    object: Literal["list"]
    data: tuple[Model, ...]


def model_ids(config: Config) -> tuple[str, ...]:
    """The ids ``model`` may take: ``whisper-1`` and the configured recognizer's model."""
    kind = config.recognizer.kind
    if kind == "whisper":
        own = "whisper-" + Path(config.whisper.model).name
    elif kind == "yandex":
        own = "speechkit-" + config.yandex.model
    else:
        own = kind
    return tuple(dict.fromkeys((WHISPER_ALIAS, own)))


def _one_of(value: str | None, allowed: tuple[str, ...], param: str) -> str | None:
    if value is None or value in allowed:
        return value
    raise OpenAIFault(
        400,
        "invalid_value",
        f"{param} must be one of: {', '.join(allowed)}",
        param=param,
    )


def parse_ask(runtime: Runtime, fields: Mapping[str, tuple[str, ...]], *, task: Task) -> Ask:
    """The request's fields as an ``Ask``; ``OpenAIFault`` (400) naming the first bad one."""

    def field(name: str) -> str | None:
        values = fields.get(name)
        return values[0] if values else None

    for name in API_ONLY_FIELDS:
        if name in fields:
            raise OpenAIFault(
                400,
                "unknown_parameter",
                f"{name} is a field of POST /api/audio, not of OpenAI's API; /v1 does not take it",
                param=name,
            )
    model = field("model")
    if not model:
        raise OpenAIFault(400, "missing_model", "model is required", param="model")
    known = model_ids(runtime.config)
    if model not in known:
        raise OpenAIFault(
            400,
            "model_not_found",
            f"model must be one of: {', '.join(known)}",
            param="model",
        )
    formats = tuple(
        f.value for f in ResponseFormat if task is Task.TRANSCRIBE or f.value != "diarized_json"
    )
    chosen = ResponseFormat(_one_of(field("response_format"), formats, "response_format") or "json")
    can_label = labels_speakers(runtime.services)
    if chosen is ResponseFormat.DIARIZED_JSON and not can_label:
        raise OpenAIFault(
            400,
            "diarization_unavailable",
            "diarized_json needs speaker labels, and this service has no diarizer configured;"
            " ask for json, verbose_json, text, srt or vtt",
            param="response_format",
        )
    temperature = field("temperature")
    if temperature is not None:
        try:
            value = float(temperature)
        except ValueError:
            value = math.nan
        if not 0 <= value <= 1:
            raise OpenAIFault(
                400, "invalid_value", "temperature must be between 0 and 1", param="temperature"
            )
    granularities = (
        *fields.get("timestamp_granularities[]", ()),
        *fields.get("timestamp_granularities", ()),
    )
    for granularity in granularities:
        _one_of(granularity, GRANULARITIES, "timestamp_granularities[]")
    if granularities and chosen is not ResponseFormat.VERBOSE_JSON:
        raise OpenAIFault(
            400,
            "invalid_value",
            "timestamp_granularities[] needs response_format verbose_json",
            param="timestamp_granularities[]",
        )
    stream = (_one_of((field("stream") or "false").lower(), ("true", "false"), "stream")) == "true"
    if stream and chosen not in (ResponseFormat.JSON, ResponseFormat.TEXT):
        raise OpenAIFault(
            400,
            "invalid_value",
            "stream needs response_format json or text: the events carry text only",
            param="stream",
        )
    return Ask(
        language=field("language") if task is Task.TRANSCRIBE else None,
        prompt=field("prompt"),
        task=task,
        response_format=chosen,
        words="word" in granularities,
        segments="segment" in granularities or not granularities,
        stream=stream,
        speakers=_speakers_of(runtime, chosen, can_label=can_label, task=task),
    )


def _speakers_of(
    runtime: Runtime, chosen: ResponseFormat, *, can_label: bool, task: Task
) -> int | None:
    """The speakers a ``/v1`` job wants: auto for diarized_json, else ``[diarization] default``.

    Without a diarizer (or a recognizer that labels them) none are asked
    for; the default is not refused here as ``/api/audio`` refuses it, since
    OpenAI's clients never send ``speakers``.
    """
    if chosen is ResponseFormat.DIARIZED_JSON:
        return AUTO_SPEAKERS
    if not can_label or task is Task.TRANSLATE:
        return None
    try:
        return parse_wanted(runtime.config.diarization.default)
    except BadSpeakers:  # pragma: no cover - the config check refuses a bad default at startup
        return None


async def create_transcription(request: Request) -> Response:
    """``POST /v1/audio/transcriptions``: the recording's transcript, once its job ends."""
    return await _audio(request, Task.TRANSCRIBE)


async def create_translation(request: Request) -> Response:
    """``POST /v1/audio/translations``: the recording in English, once its job ends."""
    return await _audio(request, Task.TRANSLATE)


async def _audio(request: Request, task: Task) -> Response:
    try:
        job, ask = await _take(request, task)
    except OpenAIFault as fault:
        return openai_error_response(fault)
    try:
        return await _answer(request, runtime_of(request), job, ask)
    except OpenAIFault as fault:
        return openai_error_response(fault, job_id=job.id)


class OpenAIDoor(FormDoor):
    """``/v1``'s form as a door: OpenAI's fields, which every answer needs, a replay's too."""

    def __init__(self, request: Request, sender: Sender, *, digest: bool, task: Task) -> None:
        super().__init__(request, require_token, sender, digest=digest)
        self.task = task
        #: The form's fields as ``/v1`` reads them, once the body is read.
        self.ask: Ask | None = None

    async def proof(self, first: Job) -> Proof:
        """The body read whole (the answer's format is in it), its digest and its fields."""
        async with self.staged() as staged:
            return Proof(digest=staged.digest, wishes=staged.wishes)

    def wishes(self, received: Received) -> Wishes:
        """OpenAI's fields checked (``parse_ask``); what they ask of the job as ``Wishes``."""
        self.ask = parse_ask(runtime_of(self.request), received.fields, task=self.task)
        return self.ask.wishes


async def _take(request: Request, task: Task) -> tuple[Job, Ask]:
    """Receive the upload and enqueue its job (or find the first one of its Idempotency-Key)."""
    runtime = runtime_of(request)
    metrics = metrics_of(request)
    door: OpenAIDoor | None = None
    try:
        caller, dedup_key = await refuse_before_body(request)
        door = OpenAIDoor(request, Sender(owner=caller), digest=dedup_key is not None, task=task)
        taken = await take_in(runtime.services, door, origin=Origin.http(), dedup_key=dedup_key)
    except ClientDisconnect:
        metrics.uploads.labels("disconnected").inc()
        raise OpenAIFault(400, "client_disconnected", "the upload was not received whole") from None
    except (ApiError, OpenAIFault, TranscriberError, BadSpeakers) as exc:
        unread = door is None or not door.read
        fault = _fault_of(exc, now=runtime.services.clock.now(), unread=unread)
        metrics.uploads.labels(fault.code).inc()
        raise fault from None
    ask = door.ask
    assert ask is not None  # noqa: S101 - take_in has the door read its form, or raises
    outcome = "accepted" if taken.is_new else "duplicate"
    metrics.uploads.labels(outcome).inc()
    job = taken.job
    log.info(
        "openai.received",
        extra={"job_id": job.id, "outcome": outcome, "task": task.value, "stream": ask.stream},
    )
    return job, ask


def _fault_of(
    exc: ApiError | OpenAIFault | TranscriberError | BadSpeakers, *, now: datetime, unread: bool
) -> OpenAIFault:
    """A refusal of the one way in as ``/v1`` answers it: ``/api``'s, in OpenAI's shape, or its own.

    ``unread``: the body was left unread, and the connection is closed.
    """
    if isinstance(exc, OpenAIFault):
        return exc
    if isinstance(exc, OptionRefused):
        return OpenAIFault(
            400, exc.code, exc.message, param="model" if exc.field == "task" else exc.field
        )
    if isinstance(exc, DedupKeyReused):
        return OpenAIFault(
            400,
            "idempotency_key_reused",
            "this Idempotency-Key was first used with a different file",
            param="Idempotency-Key",
        )
    if isinstance(exc, DiskFull):
        return OpenAIFault(
            503, "insufficient_storage", "the service is short of disk space; try again later"
        )
    error = refusal(exc, now=now)
    if error is None:
        log.warning("openai.error", extra={"error_type": type(exc).__name__})
        return OpenAIFault(503, "unavailable", "the service cannot store recordings now")
    fault = OpenAIFault.of(error)
    if unread:
        fault.headers = {**(fault.headers or {}), **CLOSE}
    return fault


async def _answer(request: Request, runtime: Runtime, job: Job, ask: Ask) -> Response:
    """Wait for the job's end and render it; a stream answers at once and follows the job."""
    headers = {JOB_HEADER: job.id}
    timeout = runtime.config.openai.wait_seconds
    if ask.stream:
        return StreamingResponse(
            _events(runtime, job.id, within=timeout),
            media_type="text/event-stream",
            headers={**headers, "Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
        )
    ended = await _wait_unless_gone(request, runtime, job.id, within=timeout)
    if ended is None:
        # Nobody reads this: the client went away; the job goes on (its result is in /api).
        log.info("openai.client_gone", extra={"job_id": job.id})
        return Response(status_code=499, headers=headers)
    check_ended(ended, timeout)
    response = await run_in_threadpool(render, ended, ask)
    response.headers[JOB_HEADER] = job.id
    return response


async def _wait_unless_gone(
    request: Request, runtime: Runtime, job_id: str, *, within: float
) -> Job | None:
    """The job at its end (or at the timeout); None as soon as the client disconnects."""
    waiting = asyncio.ensure_future(_last(runtime, job_id, within=within))
    leaving = asyncio.ensure_future(_disconnected(request))
    try:
        await asyncio.wait({waiting, leaving}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in (waiting, leaving):
            task.cancel()
        await asyncio.gather(waiting, leaving, return_exceptions=True)
    if waiting.cancelled():
        return None
    return waiting.result()


async def _last(runtime: Runtime, job_id: str, *, within: float) -> Job:
    last = None
    try:
        async for job in watch_job(runtime.services, job_id, within=within):
            last = job
    except JobNotFound:
        raise OpenAIFault(404, "job_not_found", "the job was deleted before it ended") from None
    except TranscriberError as exc:
        log.warning("openai.wait_error", extra={"error_type": type(exc).__name__})
        raise OpenAIFault(503, "unavailable", "the job database does not answer now") from None
    assert last is not None  # noqa: S101 - watch_job yields at least once or raises
    return last


async def _disconnected(request: Request) -> None:
    """Return when the client disconnects (the body is read: nothing else can arrive)."""
    while (await request.receive())["type"] != "http.disconnect":
        pass


def check_ended(job: Job, timeout: float) -> None:
    """``OpenAIFault`` unless ``job`` is done: failed, dead, or still running at the timeout."""
    if job.state is State.DONE:
        return
    if job.state is State.FAILED:
        raise OpenAIFault(400, "recording_failed", job.error or "the recording failed")
    if job.state is State.DEAD:
        raise OpenAIFault(500, "recording_dead", job.error or "the service gave up on it")
    raise OpenAIFault(
        500,
        "job_not_done",
        f"the job is still running after {timeout:g} s; its result will be at /api/status/{job.id}",
    )


def render(job: Job, ask: Ask) -> Response:
    """The done ``job`` as ``ask.response_format`` wants it (the core's one renderer)."""
    wanted = ask.response_format
    answer = openai_answer(job, wanted, words=ask.words, segments=ask.segments)
    if isinstance(answer, bytes):
        return Response(answer, media_type=_PLAIN_TYPES[wanted])
    return JSONResponse(to_json(answer))


def _event(data: Mapping[str, Any]) -> bytes:
    return b"data: " + json.dumps(data, ensure_ascii=False).encode() + b"\n\n"


def _delta(text: str) -> bytes:
    return _event({"type": "transcript.text.delta", "delta": text, "logprobs": None})


def _pieces(text: str, job: Job | JobPart) -> list[str]:
    """``text`` cut at its cues, so a client sees it segment by segment; whole if they differ."""
    duration = job.duration if isinstance(job, Job) else job.seconds
    pieces = [cue.text for cue in subtitles.cues(job.words, text=text, duration=duration)]
    joined = [piece if index == 0 else " " + piece for index, piece in enumerate(pieces)]
    return joined if "".join(joined) == text else [text]


async def _events(runtime: Runtime, job_id: str, *, within: float) -> AsyncIterator[bytes]:
    """Server-Sent Events: deltas as parts end, the rest at the job's end, then ``done``.

    A comment every ``KEEPALIVE_SECONDS`` while the job waits. A failure is
    an ``error`` event in OpenAI's shape (the official client raises it).
    """
    services = runtime.services
    sent = ""
    parts_sent = 0
    loop = asyncio.get_running_loop()
    spoke = loop.time()
    try:
        async for job in watch_job(services, job_id, within=within, every=KEEPALIVE_SECONDS):
            if job.state.is_terminal:
                break
            parts = await services.jobs.get_parts(job_id)
            while parts_sent < len(parts) and parts[parts_sent].done:
                part = parts[parts_sent]
                piece = (" " if sent else "") + (part.text or "")
                if piece.strip():
                    yield _delta(piece)
                    sent += piece
                parts_sent += 1
                spoke = loop.time()
            if loop.time() - spoke >= KEEPALIVE_SECONDS:
                yield b": keep-alive\n\n"
                spoke = loop.time()
        check_ended(job, within)
    except JobNotFound:
        yield _fault(OpenAIFault(404, "job_not_found", "the job was deleted before it ended"))
        return
    except OpenAIFault as fault:
        yield _fault(fault)
        return
    except TranscriberError:
        yield _fault(OpenAIFault(503, "unavailable", "the job database does not answer now"))
        return
    text = job.text or ""
    if text.startswith(sent):
        rest = text[len(sent) :]
        pieces = _pieces(rest, job) if not sent else ([rest] if rest else [])
        for piece in pieces:
            if piece:
                yield _delta(piece)
    usage = to_json(usage_of(job))
    yield _event({"type": "transcript.text.done", "text": text, "logprobs": None, "usage": usage})


def _fault(fault: OpenAIFault) -> bytes:
    body = {
        "message": fault.message,
        "type": "server_error",
        "param": fault.param,
        "code": fault.code,
    }
    return b"event: error\n" + _event({"error": body})


async def list_models(request: Request) -> Response:
    """``GET /v1/models``: ``whisper-1`` and the configured recognizer's model."""
    try:
        await require_token(request)
    except ApiError as exc:
        return openai_error_response(OpenAIFault.of(exc))
    ids = model_ids(runtime_of(request).config)
    return JSONResponse(to_json(ModelList(object="list", data=tuple(_model(i) for i in ids))))


async def retrieve_model(request: Request) -> Response:
    """``GET /v1/models/{model}``: one of them; 404 ``model_not_found`` for any other id."""
    try:
        await require_token(request)
    except ApiError as exc:
        return openai_error_response(OpenAIFault.of(exc))
    wanted = request.path_params["model"]
    if wanted not in model_ids(runtime_of(request).config):
        return openai_error_response(
            OpenAIFault(404, "model_not_found", "no model has this id", param="model")
        )
    return JSONResponse(to_json(_model(wanted)))


def _model(model_id: str) -> Model:
    return Model(id=model_id, object="model", created=0, owned_by="transcriber")


def _fields(*, translate: bool) -> tuple[FormField, ...]:
    formats = [f.value for f in ResponseFormat if not translate or f.value != "diarized_json"]
    fields = [
        FormField(
            name="file",
            description="the recording (audio or video); only its name's extension is kept",
            schema={"type": "string", "format": "binary", "minLength": 1},
            required=True,
            content_type="application/octet-stream",
        ),
        FormField(
            name="model",
            description="an id of GET /v1/models; whisper-1 means the configured recognizer",
            schema={"type": "string"},
            required=True,
        ),
        FormField(
            name="prompt",
            description="text that primes Whisper (names, vocabulary); other recognizers ignore it",
            schema={"type": "string", "maxLength": MAX_PROMPT_CHARS},
        ),
        FormField(
            name="response_format",
            description="json (the default), text, srt, verbose_json or vtt"
            + (
                ""
                if translate
                else "; diarized_json: segments with their speaker (400 diarization_unavailable"
                " when no diarizer is configured)"
            ),
            schema={"type": "string", "enum": formats},
        ),
        FormField(
            name="temperature",
            description="0 to 1; accepted and not used (the recognizer's settings decide)",
            schema={"type": "number", "minimum": 0, "maximum": 1},
        ),
    ]
    if not translate:
        fields += [
            FormField(
                name="language",
                description="auto or an ISO 639-1 code the recognizer knows (as /api/audio)",
                schema={"type": "string", "maxLength": 16},
            ),
            FormField(
                name="timestamp_granularities[]",
                description="word and/or segment; only with verbose_json (segment by default)",
                schema={"type": "array", "items": {"type": "string", "enum": list(GRANULARITIES)}},
            ),
            FormField(
                name="stream",
                description="true: Server-Sent Events transcript.text.delta, then .done",
                schema={"type": "string", "enum": ["true", "false"]},
            ),
        ]
    return tuple(fields)


def openai_error(status: int, description: str) -> Answer:
    """An error answer of a ``/v1`` route, in OpenAI's shape."""
    return Answer(
        status=status,
        description=description,
        content={"application/json": OpenAIError},
        headers={JOB_HEADER: "the job, when the error came after it was made"},
    )


#: The 401 of a ``/v1`` route while ``[http] api_tokens`` is set.
UNAUTHORIZED = Answer(
    status=401,
    description="tokens are configured and none of them was offered",
    content={"application/json": OpenAIError},
    headers={"WWW-Authenticate": "Bearer"},
)


def _audio_endpoint(path: str, handler: Callable[[Request], Any], *, translate: bool) -> Endpoint:
    what = "English text of" if translate else "the transcript of"
    content: dict[str, type | tuple[type, ...] | dict[str, Any] | None] = {
        "application/json": (Transcription, TranscriptionVerbose)
        if translate
        else (Transcription, TranscriptionVerbose, TranscriptionDiarized),
        "text/plain": None,
        "application/x-subrip": None,
        "text/vtt": None,
    }
    if not translate:
        content["text/event-stream"] = None
    return Endpoint(
        method="POST",
        path=path,
        handler=handler,
        summary=f"OpenAI-compatible: {what} a recording, once its job ends",
        secured=True,
        unauthorized=UNAUTHORIZED,
        parameters=(
            Param(
                name="Idempotency-Key",
                where="header",
                description="a retry with the same key and file waits for the first job",
                schema={"type": "string", "pattern": "^[!-~]{1,255}$"},
            ),
        ),
        form=_fields(translate=translate),
        answers=(
            Answer(
                status=200,
                description=f"{what} the recording, in the response_format asked for",
                content=content,
                headers={JOB_HEADER: "the job that did it; its result stays in /api"},
            ),
            openai_error(
                400,
                "a field cannot be used (callback_url, speakers, task and title are"
                " /api/audio's only: unknown_parameter), or the recording failed",
            ),
            openai_error(404, "the job was deleted before it ended"),
            openai_error(413, "the recording, or the form's other fields, passed their limit"),
            openai_error(429, "the caller's daily quota is spent until the next UTC midnight"),
            openai_error(500, "the service gave up on the job, or it still runs at the timeout"),
            openai_error(503, "the database or store did not answer, or the disk is full"),
        ),
    )


#: The ``/v1`` routes, declared once (ADR 37); ``web.api`` mounts and documents them.
ENDPOINTS: tuple[Endpoint, ...] = (
    _audio_endpoint("/v1/audio/transcriptions", create_transcription, translate=False),
    _audio_endpoint("/v1/audio/translations", create_translation, translate=True),
    Endpoint(
        method="GET",
        path="/v1/models",
        handler=list_models,
        summary="OpenAI-compatible: the models the audio routes take",
        secured=True,
        unauthorized=UNAUTHORIZED,
        answers=(json_answer(200, ModelList, "whisper-1 and the configured recognizer's model"),),
    ),
    Endpoint(
        method="GET",
        path="/v1/models/{model}",
        handler=retrieve_model,
        summary="OpenAI-compatible: one model",
        secured=True,
        unauthorized=UNAUTHORIZED,
        parameters=(Param(name="model", where="path", description="a model id"),),
        answers=(
            json_answer(200, Model, "the model"),
            openai_error(404, "no model has this id"),
        ),
    ),
)
