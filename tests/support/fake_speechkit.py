"""A fake Yandex SpeechKit on 127.0.0.1, over real HTTP: v3 and v2 async, v1 sync, documented JSON.

It serves the endpoints the recognizer uses (v1 ``stt:recognize``:
query parameters, the raw Ogg/Opus body, ``{"result"}``, 400 past 1 MB;
v2 ``longRunningRecognize``; v3 ``recognizeFileAsync`` and
``getRecognition``, whose answer is a stream of JSON lines, each a
``{"result"}`` — a ``statusCode`` keep-alive, then per utterance a
``partial``, a ``final`` with the raw lowercase text, an ``eouUpdate`` and
a ``finalRefinement`` with the normalised text — int64 fields as strings,
the speaker as ``channelTag`` when speaker labelling was asked, and the
language probabilities when no language was restricted; both async APIs
share the operations endpoint), checks the Api-Key header
and the request body as strictly as the real service (``audioChannelCount``
or ``sampleRateHertz`` with OGG_OPUS is a 400), and is scripted per next
operation: text after some pending polls, an error, no chunks, or a failing
HTTP status on the next start or check. It records every request. It also
is a ``RecognizerDriver`` for the recognizer contract suite.

Quotas and latencies are the real service's, scaled as a test asks:
``starts_per_window`` async starts (and ``sync_per_window`` sync requests)
in any ``window_seconds`` (a 429 with ``Retry-After`` past them);
``sync_seconds`` before a sync answer; ``operation_seconds`` before an
operation can be done.
"""

from __future__ import annotations

import asyncio
import collections
import json
import math
import secrets
import socket
import time
from types import TracebackType
from typing import Any

import attrs
from aiohttp import web

#: The API key the fake accepts unless told otherwise.
API_KEY = "AQVN-fake-speechkit-api-key"
#: Where the fake accepts audio from: Yandex Object Storage, as the real service does.
STORAGE_URL = "https://storage.yandexcloud.net"
STT_PATH = "/speech/stt/v2/longRunningRecognize"
SYNC_PATH = "/speech/v1/stt:recognize"
#: The largest body the sync API takes.
SYNC_MAX_BYTES = 1024 * 1024
OPERATIONS_PATH = "/operations"
V3_PATH = "/stt/v3"
V3_START_PATH = V3_PATH + "/recognizeFileAsync"
V3_RESULTS_PATH = V3_PATH + "/getRecognition"
#: Milliseconds each word of a v3 utterance lasts in the fake's timings.
WORD_MS = 500
#: The language a scripted v3 operation is heard in unless told otherwise.
HEARD_LANGUAGE = "ru-RU"
#: What the channel-2 chunk of every scripted transcript says; it must never reach a result.
OTHER_CHANNEL_TEXT = "эхо второго канала"

_DOCUMENTED_KEYS = frozenset(
    {"languageCode", "model", "audioEncoding", "profanityFilter", "literature_text"}
)
_LPCM_ONLY_KEYS = frozenset({"audioChannelCount", "sampleRateHertz"})
_V3_KEYS = frozenset(
    {
        "content",
        "uri",
        "recognitionModel",
        "recognitionClassifier",
        "speechAnalysis",
        "speakerLabeling",
        "summarization",
    }
)
_V3_MODEL_KEYS = frozenset(
    {"model", "audioFormat", "textNormalization", "languageRestriction", "audioProcessingType"}
)
_V3_NORMALIZATION = frozenset(
    {"TEXT_NORMALIZATION_UNSPECIFIED", "TEXT_NORMALIZATION_ENABLED", "TEXT_NORMALIZATION_DISABLED"}
)
_V3_LABELING = frozenset(
    {"SPEAKER_LABELING_UNSPECIFIED", "SPEAKER_LABELING_ENABLED", "SPEAKER_LABELING_DISABLED"}
)
_V3_CONTAINERS = frozenset({"WAV", "OGG_OPUS", "MP3"})


@attrs.frozen(kw_only=True)
class RecordedRequest:
    """One request the fake received."""

    method: str
    path: str
    headers: dict[str, str]
    #: The parsed JSON body; None for a GET or a body that is not JSON.
    body: Any
    #: The query parameters.
    query: dict[str, str] = attrs.field(factory=dict)
    #: Bytes in the body.
    size: int = 0


@attrs.define(kw_only=True)
class _Operation:
    """A scripted operation: pending for some polls, then its final JSON."""

    pending_checks: int = 0
    #: The ``response`` object of the final answer, or None for an answer without one.
    response: dict[str, Any] | None = None
    #: The ``error`` object of the final answer.
    error: dict[str, Any] | None = None
    checks: int = 0
    #: When (fake's monotonic seconds) the operation may be done at the soonest.
    ready_at: float = 0.0
    #: v3: who says what, in order ((speaker tag, text)); None: channel 1's chunks, one voice.
    turns: list[tuple[str, str]] | None = None
    #: v3: the language SpeechKit hears when none is restricted.
    language: str = HEARD_LANGUAGE
    #: The API it was started on: "v2" or "v3".
    api: str = "v2"
    #: v3: the start asked for speaker labels.
    labeling: bool = False
    #: v3: the languages the start allowed (WHITELIST); None: detect.
    restricted: list[str] | None = None

    def text(self) -> str:
        """What the sync API says for this script: channel 1's texts joined, or empty."""
        return " ".join(text for _, text in self.utterances())

    def utterances(self) -> list[tuple[str, str]]:
        """(speaker tag, text) of each utterance: the turns, else channel 1's chunks as "0"."""
        if self.turns is not None:
            return list(self.turns)
        if self.response is None:
            return []
        return [
            ("0", c["alternatives"][0]["text"])
            for c in self.response.get("chunks") or []
            if c.get("channelTag") == "1"
        ]

    def v3_lines(self) -> list[dict[str, Any]]:
        """The ``getRecognition`` stream of this script, as SpeechKit v3 documents it."""
        lines = [_v3_result("0", statusCode={"codeType": "WORKING", "message": ""})]
        at = 0
        for index, (speaker, text) in enumerate(self.utterances()):
            tag = speaker if self.labeling else "0"
            raw = _raw(text)
            cursors = {"finalIndex": str(index), "finalTimeMs": str(at)}
            first = raw.split()[:1]
            partial = {
                "alternatives": [_v3_alternative(" ".join(first), at, [])],
                "channelTag": tag,
            }
            lines.append(_v3_result(tag, partial=partial))
            languages = self._languages()
            final = {"alternatives": [_v3_alternative(raw, at, languages)], "channelTag": tag}
            lines.append(_v3_result(tag, final=final, audioCursors=cursors))
            end = at + WORD_MS * len(raw.split())
            lines.append(_v3_result(tag, eouUpdate={"timeMs": str(end)}))
            refined = {"alternatives": [_v3_alternative(text, at, languages)], "channelTag": tag}
            refinement = {"finalIndex": str(index), "normalizedText": refined}
            lines.append(_v3_result(tag, finalRefinement=refinement))
            at = end + WORD_MS
        return lines

    def _languages(self) -> list[dict[str, str]]:
        """The alternative's language estimates: the restricted one, else the heard one first."""
        if self.restricted:
            return [{"languageCode": self.restricted[0], "probability": "1"}]
        other = "en-US" if self.language != "en-US" else "ru-RU"
        return [
            {"languageCode": self.language, "probability": "0.93"},
            {"languageCode": other, "probability": "0.07"},
        ]


def _raw(text: str) -> str:
    """A final's text before normalisation: lowercase, no punctuation."""
    kept = "".join(c for c in text.lower() if c.isalnum() or c.isspace())
    return " ".join(kept.split())


def _v3_alternative(text: str, at: int, languages: list[dict[str, str]]) -> dict[str, Any]:
    """An Alternative of ``text`` from ``at`` ms: its words ``WORD_MS`` each, int64 as strings."""
    words = [
        {
            "text": word,
            "startTimeMs": str(at + WORD_MS * i),
            "endTimeMs": str(at + WORD_MS * i + WORD_MS - 100),
        }
        for i, word in enumerate(text.split())
    ]
    return {
        "words": words,
        "text": text,
        "startTimeMs": str(at),
        "endTimeMs": str(at + WORD_MS * len(words)),
        "confidence": "0",
        "languages": languages,
    }


def _v3_result(channel: str, **event: Any) -> dict[str, Any]:
    """One line of a v3 stream: the session, the cursors, one event and the channel tag."""
    result: dict[str, Any] = {
        "sessionUuid": {"uuid": "fake-session", "userRequestId": ""},
        "audioCursors": {"receivedDataMs": "0", "finalIndex": "0"},
        "responseWallTimeMs": "1",
        "channelTag": channel,
    }
    result.update(event)
    return {"result": result}


def _duration(seconds: float) -> str:
    """A protobuf Duration as SpeechKit writes it: nine decimals and an "s"."""
    return f"{seconds:.9f}s"


def chunk(text: str, *, channel: str = "1", first_word_at: float = 0.0) -> dict[str, Any]:
    """A chunk of the documented shape: one alternative with ``text`` and timed words."""
    words = [
        {
            "startTime": _duration(first_word_at + 0.879999999 + 0.5 * i),
            "endTime": _duration(first_word_at + 1.159999992 + 0.5 * i),
            "word": word,
            "confidence": 1,
        }
        for i, word in enumerate(text.split())
    ]
    return {
        "alternatives": [{"words": words, "text": text, "confidence": 1}],
        "channelTag": channel,
    }


def transcript_chunks(text: str) -> list[dict[str, Any]]:
    """``text`` as channel-1 chunks in order (two when it has two words or more), with a
    channel-2 chunk between them that a correct client ignores."""
    words = text.split()
    half = max(1, len(words) // 2)
    head, tail = " ".join(words[:half]), " ".join(words[half:])
    chunks = [chunk(head), chunk(OTHER_CHANNEL_TEXT, channel="2")]
    if tail:
        chunks.append(chunk(tail, first_word_at=0.5 * half))
    return chunks


class FakeSpeechKit:
    """The fake server; use as ``async with FakeSpeechKit() as fake``."""

    def __init__(
        self,
        *,
        api_key: str = API_KEY,
        storage_url: str = STORAGE_URL,
        starts_per_window: int | None = None,
        sync_per_window: int | None = None,
        window_seconds: float = 3600.0,
        sync_seconds: float = 0.0,
        operation_seconds: float = 0.0,
        sync_max_bytes: int = SYNC_MAX_BYTES,
    ) -> None:
        self.api_key = api_key
        self.storage_url = storage_url
        self.starts_per_window = starts_per_window
        self.sync_per_window = sync_per_window
        self.window_seconds = window_seconds
        self.sync_seconds = sync_seconds
        self.operation_seconds = operation_seconds
        #: Bodies past this get the sync API's 400; lower it to test the fallback on small clips.
        self.sync_max_bytes = sync_max_bytes
        #: Requests answered 429 for the quota, by path.
        self.throttled: collections.Counter[str] = collections.Counter()
        self._windows: dict[str, collections.deque[float]] = collections.defaultdict(
            collections.deque
        )
        self._sync_statuses: list[int] = []
        #: Every request received, in order.
        self.requests: list[RecordedRequest] = []
        self.operations: dict[str, _Operation] = {}
        self._scripts: list[_Operation] = []
        self._start_statuses: list[tuple[int, str | None]] = []
        self._check_faults: list[int | str] = []
        self._result_statuses: list[int | bytes] = []
        self._release = asyncio.Event()
        #: While set, every start, sync call and check gets this status (a 5xx outage, a 429
        #: storm); set from any thread.
        self.storm: int | None = None
        #: Operations started, by the audio URI each was given (a recognition, counted once).
        self.started: collections.Counter[str] = collections.Counter()
        self._runner: web.AppRunner | None = None
        self.base_url = ""

    async def __aenter__(self) -> FakeSpeechKit:
        app = web.Application(client_max_size=4 * SYNC_MAX_BYTES)
        app.router.add_post(STT_PATH, self._start)
        app.router.add_post(SYNC_PATH, self._sync)
        app.router.add_get(OPERATIONS_PATH + "/{operation_id}", self._check)
        app.router.add_post(V3_START_PATH, self._start)
        app.router.add_get(V3_RESULTS_PATH, self._results)
        self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=1)
        await self._runner.setup()
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        site = web.SockSite(self._runner, sock)
        await site.start()
        self.base_url = f"http://127.0.0.1:{sock.getsockname()[1]}"
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self._release.set()
        if self._runner is not None:
            await self._runner.cleanup()

    @property
    def stt_url(self) -> str:
        """The start endpoint, to give the recognizer as ``stt_url``."""
        return self.base_url + STT_PATH

    @property
    def v3_url(self) -> str:
        """API v3's base, to give the recognizer as ``v3_url``."""
        return self.base_url + V3_PATH

    @property
    def sync_url(self) -> str:
        """The v1 synchronous endpoint, to give the recognizer as ``sync_url``."""
        return self.base_url + SYNC_PATH

    @property
    def operation_url(self) -> str:
        """The operations endpoint, to give the recognizer as ``operation_url``."""
        return self.base_url + OPERATIONS_PATH

    def requests_to(self, path_prefix: str) -> list[RecordedRequest]:
        """The recorded requests whose path starts with ``path_prefix``."""
        return [r for r in self.requests if r.path.startswith(path_prefix)]

    # Scripting the next operation.

    def finish_next(self, text: str, *, pending_checks: int = 0) -> None:
        """The next operation pends ``pending_checks`` polls, then ends with ``text``."""
        self.finish_next_with_chunks(transcript_chunks(text), pending_checks=pending_checks)

    def finish_next_with_chunks(
        self, chunks: list[dict[str, Any]], *, pending_checks: int = 0
    ) -> None:
        """The next operation ends with exactly these chunks."""
        response = {
            "@type": "type.googleapis.com/yandex.cloud.ai.stt.v2.LongRunningRecognitionResponse",
            "chunks": chunks,
        }
        self._scripts.append(_Operation(pending_checks=pending_checks, response=response))

    def finish_next_dialogue(
        self,
        turns: list[tuple[str, str]],
        *,
        language: str = HEARD_LANGUAGE,
        pending_checks: int = 0,
    ) -> None:
        """The next operation ends with ``turns`` ((speaker tag, text)), heard in ``language``.

        On v3 each turn is an utterance tagged with its speaker when labelling
        was asked; on v2 (and v1) the turns are one voice's text.
        """
        text = " ".join(t for _, t in turns)
        response = {"@type": "LongRunningRecognitionResponse", "chunks": transcript_chunks(text)}
        self._scripts.append(
            _Operation(
                pending_checks=pending_checks, response=response, turns=turns, language=language
            )
        )

    def reject_next(self, reason: str, *, code: int = 3, pending_checks: int = 0) -> None:
        """The next operation ends ``done`` with an ``error`` whose message names the audio."""
        error = {"code": code, "message": f"{reason}: cannot read the audio", "details": []}
        self._scripts.append(_Operation(pending_checks=pending_checks, error=error))

    def no_chunks_next(self, *, pending_checks: int = 0, empty_list: bool = False) -> None:
        """The next operation ends ``done`` with no chunks: an empty list, or no key at all."""
        response: dict[str, Any] = {"@type": "LongRunningRecognitionResponse"}
        if empty_list:
            response["chunks"] = []
        self._scripts.append(_Operation(pending_checks=pending_checks, response=response))

    def status_next_start(self, status: int, *, retry_after: str | None = None) -> None:
        """The next start is answered with this HTTP status and an error body naming the audio.

        ``retry_after`` is sent as the ``Retry-After`` header when given.
        """
        self._start_statuses.append((status, retry_after))

    def status_next_sync(self, status: int) -> None:
        """The next sync request is answered with this HTTP status (a 400 that is no size issue)."""
        self._sync_statuses.append(status)

    def status_next_results(self, status: int) -> None:
        """The next v3 ``getRecognition`` is answered with this HTTP status."""
        self._result_statuses.append(status)

    def raw_results_next(self, body: bytes) -> None:
        """The next v3 ``getRecognition`` is answered 200 with exactly these bytes."""
        self._result_statuses.append(body)

    def status_next_check(self, status: int) -> None:
        """The next check is answered with this HTTP status."""
        self._check_faults.append(status)

    def drop_next_check(self) -> None:
        """The next check's connection is closed without an answer."""
        self._check_faults.append("drop")

    def stall_next_check(self) -> None:
        """The next check is never answered (until the fake closes)."""
        self._check_faults.append("stall")

    # RecognizerDriver, for the contract suite.

    def unavailable_next_start(self) -> None:
        """Down: the next start gets a 503 (a 429 is the service's condition, not transient)."""
        self.status_next_start(503)

    def unavailable_next_check(self) -> None:
        """Down: the next check gets a 503."""
        self.status_next_check(503)

    def refuse_next_start(self) -> None:
        """A bad request: the next start gets a 400."""
        self.status_next_start(400)

    # The endpoints.

    async def _record(self, request: web.Request) -> Any:
        body: Any = None
        raw = await request.read() if request.can_read_body else b""
        if raw:
            try:
                body = json.loads(raw)
            except ValueError:
                body = None
        self.requests.append(
            RecordedRequest(
                method=request.method,
                path=request.path,
                headers=dict(request.headers),
                body=body,
                query=dict(request.query),
                size=len(raw),
            )
        )
        return body

    def _over_quota(self, path: str, limit: int | None) -> web.Response | None:
        """A 429 with ``Retry-After`` when ``limit`` requests already came within the window."""
        if limit is None:
            return None
        now = time.monotonic()
        times = self._windows[path]
        while times and times[0] <= now - self.window_seconds:
            times.popleft()
        if len(times) >= limit:
            self.throttled[path] += 1
            answer = _error(429, 8, "quota exceeded")
            wait = times[0] + self.window_seconds - now
            answer.headers["Retry-After"] = str(max(1, math.ceil(wait)))
            return answer
        times.append(now)
        return None

    def _stormed(self) -> web.Response | None:
        """The storm's answer while one blows: its status (429 with ``Retry-After: 1``)."""
        status = self.storm
        if status is None:
            return None
        answer = _error(status, 8 if status == 429 else 13, "the service is unavailable")
        if status == 429:
            answer.headers["Retry-After"] = "1"
        return answer

    async def _sync(self, request: web.Request) -> web.StreamResponse:  # noqa: PLR0911
        """API v1: raw Ogg/Opus in, ``{"result": text}`` out, after ``sync_seconds``."""
        await self._record(request)
        recorded = self.requests[-1]
        if not self._authorized(request):
            return _v1_error(401, "UNAUTHORIZED", "The token is invalid")
        stormed = self._stormed()
        if stormed is not None:
            return stormed
        throttled = self._over_quota(SYNC_PATH, self.sync_per_window)
        if throttled is not None:
            return throttled
        if self._sync_statuses:
            status = self._sync_statuses.pop(0)
            return _v1_error(status, "BAD_REQUEST", "the request cannot be processed")
        query = recorded.query
        if query.get("format") != "oggopus" or not query.get("lang") or not query.get("topic"):
            return _v1_error(400, "BAD_REQUEST", f"bad query parameters {sorted(query)}")
        if recorded.size > self.sync_max_bytes:
            return _v1_error(400, "BAD_REQUEST", "audio size is too large: at most 1 MB")
        raw = await request.read()
        if not raw.startswith(b"OggS"):
            return _v1_error(400, "BAD_REQUEST", "the audio is not Ogg")
        if self._start_statuses:
            status, retry_after = self._start_statuses.pop(0)
            answer = _v1_error(status, "BAD_REQUEST", "cannot process the audio")
            if retry_after is not None:
                answer.headers["Retry-After"] = retry_after
            return answer
        script = self._scripts.pop(0) if self._scripts else None
        if self.sync_seconds:
            await asyncio.sleep(self.sync_seconds)
        text = "fake transcript" if script is None else script.text()
        return web.json_response({"result": text})

    def _authorized(self, request: web.Request) -> bool:
        return request.headers.get("Authorization") == f"Api-Key {self.api_key}"

    async def _start(self, request: web.Request) -> web.StreamResponse:
        body = await self._record(request)
        if not self._authorized(request):
            return _error(401, 16, "The token is invalid")
        stormed = self._stormed()
        if stormed is not None:
            return stormed
        # v2 and v3 starts count against one quota: the account's async recognitions.
        throttled = self._over_quota(STT_PATH, self.starts_per_window)
        if throttled is not None:
            return throttled
        if self._start_statuses:
            status, retry_after = self._start_statuses.pop(0)
            uri = _uri_of(body)
            answer = _error(status, 3 if status == 400 else 8, f"cannot process audio {uri}")
            if retry_after is not None:
                answer.headers["Retry-After"] = retry_after
            return answer
        v3 = request.path == V3_START_PATH
        problem = self._v3_body_problem(body) if v3 else self._body_problem(body)
        if problem is not None:
            return _error(400, 3, problem)
        operation_id = "e03" + secrets.token_hex(8)
        script = self._scripts.pop(0) if self._scripts else None
        if script is None:
            self.finish_next("fake transcript")
            script = self._scripts.pop(0)
        if v3:
            model = body["recognitionModel"]
            script.api = "v3"
            labeling = (body.get("speakerLabeling") or {}).get("speakerLabeling")
            script.labeling = labeling == "SPEAKER_LABELING_ENABLED"
            restriction = model.get("languageRestriction")
            if restriction and restriction.get("restrictionType") == "WHITELIST":
                script.restricted = list(restriction.get("languageCode") or [])
        script.ready_at = time.monotonic() + self.operation_seconds
        self.operations[operation_id] = script
        self.started[_uri_of(body)] += 1
        return web.json_response(_operation_json(operation_id, done=False))

    def _body_problem(self, body: Any) -> str | None:  # noqa: PLR0911 - one return per refusal
        """What a strict SpeechKit would refuse in a start body, or None."""
        if not isinstance(body, dict) or set(body) != {"config", "audio"}:
            return "the body must hold exactly config and audio"
        config, audio = body["config"], body["audio"]
        if not isinstance(config, dict) or set(config) != {"specification"}:
            return "config must hold exactly specification"
        spec = config["specification"]
        if not isinstance(spec, dict):
            return "specification must be an object"
        if spec.get("audioEncoding") == "OGG_OPUS" and _LPCM_ONLY_KEYS & set(spec):
            return "audioChannelCount and sampleRateHertz are only for LINEAR16_PCM"
        unknown = set(spec) - _DOCUMENTED_KEYS - _LPCM_ONLY_KEYS
        if unknown:
            return f"unknown specification fields: {sorted(unknown)}"
        for key in ("languageCode", "model", "audioEncoding"):
            if not isinstance(spec.get(key), str):
                return f"specification.{key} must be a string"
        if (
            not isinstance(audio, dict)
            or set(audio) != {"uri"}
            or not isinstance(audio["uri"], str)
        ):
            return "audio must hold exactly a uri"
        if not audio["uri"].startswith(self.storage_url + "/"):
            return f"audio {audio['uri']} is not in Yandex Object Storage"
        return None

    def _v3_body_problem(self, body: Any) -> str | None:  # noqa: PLR0911, PLR0912 - one return per refusal
        """What a strict SpeechKit v3 would refuse in a ``recognizeFileAsync`` body, or None."""
        if not isinstance(body, dict):
            return "the body must be an object"
        if set(body) - _V3_KEYS:
            return f"unknown fields: {sorted(set(body) - _V3_KEYS)}"
        if ("uri" in body) == ("content" in body):
            return "exactly one of uri and content"
        uri = body.get("uri")
        if not isinstance(uri, str) or not uri.startswith(self.storage_url + "/"):
            return f"audio {uri} is not in Yandex Object Storage"
        model = body.get("recognitionModel")
        if not isinstance(model, dict) or set(model) - _V3_MODEL_KEYS:
            return "recognitionModel holds unknown fields"
        audio_format = model.get("audioFormat")
        if not isinstance(audio_format, dict) or len(audio_format) != 1:
            return "audioFormat must hold one of rawAudio and containerAudio"
        container = audio_format.get("containerAudio")
        if container is not None:
            if set(container) != {"containerAudioType"}:
                return "containerAudio holds exactly containerAudioType"
            if container["containerAudioType"] not in _V3_CONTAINERS:
                return "unknown containerAudioType"
        else:
            raw = audio_format.get("rawAudio") or {}
            # int64 fields are strings in v3's JSON.
            if not all(
                isinstance(raw.get(k), str) for k in ("sampleRateHertz", "audioChannelCount")
            ):
                return "rawAudio needs sampleRateHertz and audioChannelCount as int64 strings"
        normalization = model.get("textNormalization")
        if normalization is not None and normalization.get("textNormalization") not in (
            _V3_NORMALIZATION
        ):
            return "unknown textNormalization"
        restriction = model.get("languageRestriction")
        if restriction is not None:
            if restriction.get("restrictionType") not in ("WHITELIST", "BLACKLIST"):
                return "unknown restrictionType"
            codes = restriction.get("languageCode")
            if not isinstance(codes, list) or not all(isinstance(c, str) for c in codes):
                return "languageCode must be a list of strings"
        labeling = body.get("speakerLabeling")
        if labeling is not None and (
            set(labeling) != {"speakerLabeling"} or labeling["speakerLabeling"] not in _V3_LABELING
        ):
            return "speakerLabeling holds exactly a known speakerLabeling"
        return None

    async def _results(self, request: web.Request) -> web.StreamResponse:
        """v3 ``getRecognition``: the done operation's results, one JSON object a line."""
        await self._record(request)
        if not self._authorized(request):
            return _error(401, 16, "The token is invalid")
        stormed = self._stormed()
        if stormed is not None:
            return stormed
        if self._result_statuses:
            fault = self._result_statuses.pop(0)
            if isinstance(fault, bytes):
                return web.Response(body=fault, content_type="application/json")
            return _error(fault, 8, "cannot read the results")
        operation_id = request.query.get("operationId", "")
        operation = self.operations.get(operation_id)
        if operation is None or operation.api != "v3" or not self._done(operation):
            return _error(404, 5, f"Operation {operation_id} has no results")
        body = "\n".join(json.dumps(line, ensure_ascii=False) for line in operation.v3_lines())
        return web.Response(text=body + "\n", content_type="application/json")

    def _done(self, operation: _Operation) -> bool:
        """The operation is past its pending polls and its latency."""
        return (
            operation.checks > operation.pending_checks and time.monotonic() >= operation.ready_at
        )

    async def _check(self, request: web.Request) -> web.StreamResponse:
        await self._record(request)
        operation_id = request.match_info["operation_id"]
        if not self._authorized(request):
            return _error(401, 16, "The token is invalid")
        stormed = self._stormed()
        if stormed is not None:
            return stormed
        if self._check_faults:
            return await self._fault(request, self._check_faults.pop(0), operation_id)
        operation = self.operations.get(operation_id)
        if operation is None:
            return _error(404, 5, f"Operation {operation_id} not found")
        operation.checks += 1
        if operation.checks <= operation.pending_checks or time.monotonic() < operation.ready_at:
            return web.json_response(_operation_json(operation_id, done=False))
        answer = _operation_json(operation_id, done=True)
        if operation.error is not None:
            answer["error"] = operation.error
        elif operation.api == "v3":
            # v3's results are read from getRecognition; the operation carries none.
            answer["response"] = {
                "@type": "type.googleapis.com/speechkit.stt.v3.RecognizeFileResponse"
            }
        elif operation.response is not None:
            answer["response"] = operation.response
        return web.json_response(answer)

    async def _fault(
        self, request: web.Request, fault: int | str, operation_id: str
    ) -> web.StreamResponse:
        """The scripted failure of a check: a dropped connection, silence, or a status."""
        if fault == "drop":
            assert request.transport is not None
            request.transport.close()
            return web.Response()
        if fault == "stall":
            await self._release.wait()
            return _error(504, 4, "deadline exceeded")
        assert isinstance(fault, int)
        return _error(fault, 8, f"operation {operation_id} is throttled")


def _operation_json(operation_id: str, *, done: bool) -> dict[str, Any]:
    return {
        "done": done,
        "id": operation_id,
        "createdAt": "2026-01-01T00:00:00Z",
        "createdBy": "ajefake0000000000000",
        "modifiedAt": "2026-01-01T00:00:01Z",
    }


def _error(status: int, code: int, message: str) -> web.Response:
    """An error answer shaped like Yandex Cloud's: a gRPC code and a message."""
    return web.json_response({"code": code, "message": message, "details": []}, status=status)


def _v1_error(status: int, code: str, message: str) -> web.Response:
    """An error answer of the v1 API: its error code and message."""
    return web.json_response({"error_code": code, "error_message": message}, status=status)


def _uri_of(body: Any) -> str:
    if isinstance(body, dict) and isinstance(body.get("uri"), str):
        return body["uri"]
    try:
        return str(body["audio"]["uri"])
    except (KeyError, TypeError):
        return "?"
