"""A fake Yandex SpeechKit v2 async API on 127.0.0.1, over real HTTP, with the documented JSON.

It serves the two endpoints the recognizer uses, checks the Api-Key header
and the request body as strictly as the real service (``audioChannelCount``
or ``sampleRateHertz`` with OGG_OPUS is a 400), and is scripted per next
operation: text after some pending polls, an error, no chunks, or a failing
HTTP status on the next start or check. It records every request. It also
is a ``RecognizerDriver`` for the recognizer contract suite.
"""

from __future__ import annotations

import asyncio
import json
import secrets
import socket
from types import TracebackType
from typing import Any

import attrs
from aiohttp import web

#: The API key the fake accepts unless told otherwise.
API_KEY = "AQVN-fake-speechkit-api-key"
#: Where the fake accepts audio from: Yandex Object Storage, as the real service does.
STORAGE_URL = "https://storage.yandexcloud.net"
STT_PATH = "/speech/stt/v2/longRunningRecognize"
OPERATIONS_PATH = "/operations"
#: What the channel-2 chunk of every scripted transcript says; it must never reach a result.
OTHER_CHANNEL_TEXT = "эхо второго канала"

_DOCUMENTED_KEYS = frozenset(
    {"languageCode", "model", "audioEncoding", "profanityFilter", "literature_text"}
)
_LPCM_ONLY_KEYS = frozenset({"audioChannelCount", "sampleRateHertz"})


@attrs.frozen(kw_only=True)
class RecordedRequest:
    """One request the fake received."""

    method: str
    path: str
    headers: dict[str, str]
    #: The parsed JSON body; None for a GET or a body that is not JSON.
    body: Any


@attrs.define(kw_only=True)
class _Operation:
    """A scripted operation: pending for some polls, then its final JSON."""

    pending_checks: int = 0
    #: The ``response`` object of the final answer, or None for an answer without one.
    response: dict[str, Any] | None = None
    #: The ``error`` object of the final answer.
    error: dict[str, Any] | None = None
    checks: int = 0


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

    def __init__(self, *, api_key: str = API_KEY, storage_url: str = STORAGE_URL) -> None:
        self.api_key = api_key
        self.storage_url = storage_url
        #: Every request received, in order.
        self.requests: list[RecordedRequest] = []
        self.operations: dict[str, _Operation] = {}
        self._scripts: list[_Operation] = []
        self._start_statuses: list[tuple[int, str | None]] = []
        self._check_faults: list[int | str] = []
        self._release = asyncio.Event()
        self._runner: web.AppRunner | None = None
        self.base_url = ""

    async def __aenter__(self) -> FakeSpeechKit:
        app = web.Application()
        app.router.add_post(STT_PATH, self._start)
        app.router.add_get(OPERATIONS_PATH + "/{operation_id}", self._check)
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
        if request.can_read_body:
            try:
                body = json.loads(await request.read())
            except ValueError:
                body = None
        self.requests.append(
            RecordedRequest(
                method=request.method,
                path=request.path,
                headers=dict(request.headers),
                body=body,
            )
        )
        return body

    def _authorized(self, request: web.Request) -> bool:
        return request.headers.get("Authorization") == f"Api-Key {self.api_key}"

    async def _start(self, request: web.Request) -> web.StreamResponse:
        body = await self._record(request)
        if not self._authorized(request):
            return _error(401, 16, "The token is invalid")
        if self._start_statuses:
            status, retry_after = self._start_statuses.pop(0)
            uri = _uri_of(body)
            answer = _error(status, 3 if status == 400 else 8, f"cannot process audio {uri}")
            if retry_after is not None:
                answer.headers["Retry-After"] = retry_after
            return answer
        problem = self._body_problem(body)
        if problem is not None:
            return _error(400, 3, problem)
        operation_id = "e03" + secrets.token_hex(8)
        script = self._scripts.pop(0) if self._scripts else None
        if script is None:
            self.finish_next("fake transcript")
            script = self._scripts.pop(0)
        self.operations[operation_id] = script
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

    async def _check(self, request: web.Request) -> web.StreamResponse:
        await self._record(request)
        operation_id = request.match_info["operation_id"]
        if not self._authorized(request):
            return _error(401, 16, "The token is invalid")
        if self._check_faults:
            return await self._fault(request, self._check_faults.pop(0), operation_id)
        operation = self.operations.get(operation_id)
        if operation is None:
            return _error(404, 5, f"Operation {operation_id} not found")
        operation.checks += 1
        if operation.checks <= operation.pending_checks:
            return web.json_response(_operation_json(operation_id, done=False))
        answer = _operation_json(operation_id, done=True)
        if operation.error is not None:
            answer["error"] = operation.error
        if operation.response is not None:
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


def _uri_of(body: Any) -> str:
    try:
        return str(body["audio"]["uri"])
    except (KeyError, TypeError):
        return "?"
