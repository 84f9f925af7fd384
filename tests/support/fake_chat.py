"""A fake OpenAI-compatible chat server on 127.0.0.1, over real HTTP (SPEC §27).

It serves ``POST /v1/chat/completions`` as Ollama, llama.cpp's server and
OpenAI do, checks every request as strictly as a real one would (the bearer
key, the model's name, the messages' shape, a context limit: a request over
``limit_tokens`` is a 400 as a real server's "context length exceeded"), and
records each one. Answers are scripted per next request (a text, an HTTP
status, a delay) or made from the request: a summary whose paragraph names
the speakers it read, or an answer citing the first transcript line.
``json_mode=False`` plays a server that refuses ``response_format``.
``stop()`` and ``start()`` take it down and up on the same port.
"""

from __future__ import annotations

import asyncio
import json
import math
import re
import socket
from types import TracebackType
from typing import Any

import attrs
from aiohttp import web

API_KEY = "sk-fake-chat-key"
MODEL = "fake-llama"
#: A transcript line as the service writes it: ``[n] HH:MM:SS Name: words``.
_LINE = re.compile(r"^\[(\d+)\] \d\d:\d\d:\d\d (?:([^:\n]+): )?(.*)$", re.MULTILINE)


def tokens_of(text: str) -> int:
    """The fake's tokenizer: one token per three UTF-8 bytes, rounded up (a generous one)."""
    return math.ceil(len(text.encode()) / 3)


@attrs.frozen(kw_only=True)
class ChatRequest:
    """One request as received."""

    model: str
    messages: tuple[dict[str, str], ...]
    response_format: dict[str, Any] | None
    authorization: str | None
    #: The fake's count of the request's content tokens (``tokens_of`` of each message).
    tokens: int

    @property
    def text(self) -> str:
        """Every message's content, joined."""
        return "\n".join(m["content"] for m in self.messages)

    @property
    def is_question(self) -> bool:
        """True for a question's request (its system prompt asks for an answer)."""
        return '"answer"' in self.messages[0]["content"]


@attrs.frozen
class Reply:
    """A scripted answer: a status (200: ``content``), after ``delay`` seconds or ``until`` set."""

    content: str | None = None
    status: int = 200
    delay: float = 0.0
    #: Held until this event is set: a model still working, for as long as the test wants.
    until: asyncio.Event | None = attrs.field(default=None, eq=False)


class FakeChatServer:
    """The fake server; use as ``async with FakeChatServer() as fake``; ``fake.base_url`` + /v1."""

    def __init__(
        self, *, api_key: str = API_KEY, model: str = MODEL, limit_tokens: int = 8000
    ) -> None:
        self.api_key = api_key
        self.model = model
        #: The context limit: a request whose messages are over it is a 400.
        self.limit_tokens = limit_tokens
        #: False: ``response_format`` is refused with a 400, as some servers do.
        self.json_mode = True
        #: Every request received, in order (those refused too).
        self.requests: list[ChatRequest] = []
        #: Answers for the next requests, in order; empty: answers made from the request.
        self.script: list[Reply] = []
        #: While set, every request gets this status (a 5xx outage, a 429 storm).
        self.storm: int | None = None
        #: While clear, requests wait (after being recorded) until it is set.
        self.gate = asyncio.Event()
        self.gate.set()
        #: Set at each request received: ``await fake.received.wait()`` then clear it.
        self.received = asyncio.Event()
        self._runner: web.AppRunner | None = None
        self._port = 0
        self.base_url = ""

    async def __aenter__(self) -> FakeChatServer:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.gate.set()
        await self.stop()

    async def start(self) -> None:
        """Listen (again, on the same port after ``stop``)."""
        app = web.Application()
        app.router.add_post("/v1/chat/completions", self._complete)
        self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.5)
        await self._runner.setup()
        sock = socket.socket()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", self._port))
        self._port = sock.getsockname()[1]
        await web.SockSite(self._runner, sock).start()
        self.base_url = f"http://127.0.0.1:{self._port}/v1"

    async def stop(self) -> None:
        """Stop listening: connections are refused until ``start``."""
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    def answer_next(self, *replies: Reply | str) -> None:
        """Script the next answers: a ``Reply``, or a text answered 200."""
        self.script.extend(r if isinstance(r, Reply) else Reply(content=r) for r in replies)

    @property
    def answered(self) -> list[ChatRequest]:
        """The requests that reached the model (not refused for their key, model or size)."""
        return [r for r in self.requests if r.tokens <= self.limit_tokens]

    async def _complete(self, request: web.Request) -> web.Response:  # noqa: PLR0911
        try:
            body = await request.json()
        except ValueError:
            return _error(400, "invalid JSON body")
        messages = body.get("messages")
        if not isinstance(messages, list) or not all(
            isinstance(m, dict)
            and m.get("role") in ("system", "user", "assistant")
            and isinstance(m.get("content"), str)
            for m in messages
        ):
            return _error(400, "messages must be a list of {role, content}")
        recorded = ChatRequest(
            model=str(body.get("model")),
            messages=tuple({"role": m["role"], "content": m["content"]} for m in messages),
            response_format=body.get("response_format"),
            authorization=request.headers.get("Authorization"),
            tokens=sum(tokens_of(m["content"]) for m in messages),
        )
        self.requests.append(recorded)
        self.received.set()
        await self.gate.wait()
        if self.api_key and recorded.authorization != f"Bearer {self.api_key}":
            return _error(401, "invalid api key")
        if recorded.model != self.model:
            return _error(404, f"model '{recorded.model}' not found")
        if recorded.response_format is not None and not self.json_mode:
            return _error(400, "response_format is not supported")
        if recorded.tokens > self.limit_tokens:
            return _error(400, "this model's maximum context length is exceeded")
        if self.storm is not None:
            return _error(self.storm, "overloaded")
        reply = self.script.pop(0) if self.script else Reply(content=made_up(recorded))
        if reply.delay:
            await asyncio.sleep(reply.delay)
        if reply.until is not None:
            await reply.until.wait()
        if reply.status != 200:
            # As some servers do, the error echoes the request: the client must never show it.
            return _error(reply.status, f"scripted failure for: {recorded.text[:200]}")
        content = reply.content if reply.content is not None else made_up(recorded)
        return web.json_response(
            {
                "id": f"chatcmpl-{len(self.requests)}",
                "object": "chat.completion",
                "created": 0,
                "model": self.model,
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": content},
                        "finish_reason": "stop",
                    }
                ],
                "usage": {
                    "prompt_tokens": recorded.tokens,
                    "completion_tokens": tokens_of(content),
                    "total_tokens": recorded.tokens + tokens_of(content),
                },
            }
        )


def made_up(request: ChatRequest) -> str:
    """An answer in the shape asked for: a summary naming its speakers, or a cited answer."""
    lines = _LINE.findall(request.messages[-1]["content"])
    if request.is_question:
        cited = [int(lines[0][0])] if lines else []
        return json.dumps({"answer": "The transcript says so.", "lines": cited})
    speakers = sorted({who for _, who, _ in lines if who})
    return json.dumps(
        {
            "text": f"A talk between {', '.join(speakers) or 'nobody named'}.",
            "points": [said[:60] for _, _, said in lines[:2]] or ["combined"],
            "actions": [{"text": "send the report", "who": speakers[0] if speakers else None}],
        }
    )


def _error(status: int, message: str) -> web.Response:
    return web.json_response({"error": {"message": message, "type": "error"}}, status=status)
