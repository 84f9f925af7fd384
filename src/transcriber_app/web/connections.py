"""HTTP/1.1 connections with the limits uvicorn's httptools protocol lacks (ADR 18).

uvicorn hands every byte of a request's headers to httptools, which keeps
the unfinished header in memory however long it grows, and waits for the
headers however long they take; it accepts every connection it is offered.
``LimitedHttpProtocol`` is uvicorn's ``HttpToolsProtocol`` with three
bounds, each enforced before the bytes reach the parser:

- **Header size.** At most ``max_header_bytes`` are fed to the parser
  before the headers end; one more byte and the request gets 431
  ``headers_too_large`` and the connection closes. A read that holds the
  end of the headers and the start of the body is split at the limit
  (a memoryview, no copy), so the count is exact for a connection's first
  request. A later request on a keep-alive connection whose headers start
  in the middle of a read may pass the limit by at most that read (uvloop
  reads up to 256 KiB at a time): memory stays bounded either way.
- **Header time.** The headers must be complete within
  ``header_timeout_seconds`` of the connection's start, or, on a
  keep-alive connection, of the first byte after the previous answer: a
  deadline, not an idle timeout, so trickling a byte at a time does not
  extend it. Past it the connection is closed without an answer.
- **Connections.** A connection accepted while ``max_connections`` are
  open gets a 503 ``too_many_connections`` and is closed at once, before
  anything is read: file descriptors stay bounded, and the slots free up
  as the flood's own headers time out.

A request the parser refuses (``Content-Length: -5``, a NUL in the path)
gets a JSON 400 ``bad_request`` instead of uvicorn's plain text.

**Lingering close.** An answer that closes the connection before the
request's body has arrived (an upload refused for its token, its declared
length or the disk) half-closes it and reads and drops what the client
still sends, up to ``LINGER_BYTES`` for ``LINGER_SECONDS``, as after a 431.
Closed at once, the socket would answer the body's next bytes with a reset,
and a client still sending them (httpx, the openai client) loses the answer
it had already received.

``fit_open_files_limit`` raises the process's soft RLIMIT_NOFILE to what
``max_connections`` needs, so the cap, not the kernel, refuses the excess.
"""

from __future__ import annotations

import asyncio
import json
import logging
import resource
from typing import Any, ClassVar

from uvicorn.config import Config
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
from uvicorn.server import ServerState

from transcriber_app.config import HttpConfig

log = logging.getLogger("transcriber.http")

#: After a 431, or an answer that closes before the body came, the request's further
#: bytes are read and dropped up to this many, so a client still sending them gets
#: to read the answer instead of a reset.
LINGER_BYTES = 1024 * 1024
#: ... or for this long, whichever comes first.
LINGER_SECONDS = 1.0
#: Descriptors the service needs besides its connections: the database, stored
#: and staged files, ffmpeg's pipes, the listening socket, the logs.
RESERVED_FILES = 256


def _answer(status: str, code: str, message: str) -> bytes:
    """A complete HTTP/1.1 response with our JSON error body that closes the connection."""
    body = json.dumps({"error": code, "message": message}).encode()
    head = (
        f"HTTP/1.1 {status}\r\n"
        "content-type: application/json\r\n"
        f"content-length: {len(body)}\r\n"
        "connection: close\r\n\r\n"
    )
    return head.encode("ascii") + body


_BAD_REQUEST = _answer(
    "400 Bad Request",
    "bad_request",
    "The request is not valid HTTP/1.1 (its start line or headers, such as Content-Length).",
)
_TOO_MANY_CONNECTIONS = _answer(
    "503 Service Unavailable",
    "too_many_connections",
    "The server has as many connections open as it allows; try again shortly.",
)


class LimitedHttpProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol with a header size limit and deadline, and a connection cap."""

    #: The ``[http]`` settings the limits come from; ``protocol_for`` sets them.
    limits: ClassVar[HttpConfig] = HttpConfig()

    def __init__(
        self,
        config: Config,
        server_state: ServerState,
        app_state: dict[str, Any],
        _loop: asyncio.AbstractEventLoop | None = None,
    ) -> None:
        super().__init__(config, server_state, app_state, _loop)
        #: Bytes of the current request's headers are still expected.
        self._in_headers = True
        #: Bytes fed to the parser since the current request's headers began.
        self._header_bytes = 0
        #: The header deadline, or the end of lingering after a 431.
        self._timer: asyncio.TimerHandle | None = None
        #: Refused at accept (past the cap): never counted, never read.
        self._refused = False
        #: Lingering (after a 431 or an early closing answer): bytes still to drop
        #: before closing; None otherwise.
        self._linger_left: int | None = None

    def connection_made(  # type: ignore[override]  # uvicorn narrows it the same way
        self, transport: asyncio.Transport
    ) -> None:
        """Take the connection if there is room for it, and start its header deadline."""
        if len(self.connections) >= self.limits.max_connections:
            self._refused = True
            self.transport = transport
            transport.write(_TOO_MANY_CONNECTIONS)
            transport.close()
            return
        super().connection_made(transport)
        self._start_deadline()

    def connection_lost(self, exc: Exception | None) -> None:
        """Stop the timers; a refused connection was never counted."""
        self._stop_timer()
        if not self._refused:
            super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        """Feed the parser, never more than the header limit while the headers last."""
        if self._refused:
            return
        if self._linger_left is not None:
            self._linger_left -= len(data)
            if self._linger_left <= 0:
                self.transport.close()
            return
        if self._in_headers:
            self._feed_headers(data)
            return
        if self._timer is None and self.cycle is not None and self.cycle.response_complete:
            # Bytes after the answer (the rest of an unread body, stray CRLFs,
            # or the next request) cancel uvicorn's keep-alive timeout; the
            # next request's headers must still end in time.
            self._start_deadline()
        super().data_received(data)

    def _feed_headers(self, data: bytes) -> None:
        """Feed header bytes up to the limit; 431 if the headers go on past it."""
        room = self.limits.max_header_bytes - self._header_bytes
        if len(data) <= room:
            self._header_bytes += len(data)
            super().data_received(data)
            return
        view = memoryview(data)
        if room > 0:
            self._header_bytes += room
            super().data_received(view[:room])  # type: ignore[arg-type]  # httptools takes any buffer
        if self.transport.is_closing():
            return
        if self._in_headers:
            self._refuse_headers()
            return
        super().data_received(view[room:])  # type: ignore[arg-type]  # the body's start

    def on_message_begin(self) -> None:
        """A new request on the connection: its header count and deadline start."""
        if not self._in_headers:
            self._in_headers = True
            self._header_bytes = 0
            if self._timer is None:
                self._start_deadline()
        super().on_message_begin()

    def on_headers_complete(self) -> None:
        """The headers arrived in time and within the limit: the request goes to the app."""
        self._in_headers = False
        self._stop_timer()
        super().on_headers_complete()
        cycle = self.cycle
        if cycle is not None and cycle.transport is self.transport:
            cycle.transport = _LingeringTransport(self)  # type: ignore[assignment]

    def _close_after_answer(self) -> None:
        """The app's answer closes the connection: linger if its request's body is still coming."""
        cycle = self.cycle
        transport = self.transport
        if (
            cycle is None
            or not cycle.more_body
            or transport.is_closing()
            or not transport.can_write_eof()
        ):
            transport.close()
            return
        self._linger()

    def _linger(self) -> None:
        """Half-close, then drop what the client still sends for a while: it reads the answer."""
        self._stop_timer()
        self.transport.write_eof()
        self._linger_left = LINGER_BYTES
        self._timer = self.loop.call_later(LINGER_SECONDS, self.transport.close)

    def _start_deadline(self) -> None:
        self._stop_timer()
        self._timer = self.loop.call_later(self.limits.header_timeout_seconds, self._too_slow)

    def _stop_timer(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def send_400_response(self, msg: str) -> None:
        """A request the parser refuses gets our JSON 400 like every error, then the close."""
        self._stop_timer()
        self.transport.write(_BAD_REQUEST)
        self.transport.close()

    def _too_slow(self) -> None:
        """The headers did not end by the deadline: drop the connection without an answer."""
        self._timer = None
        if not self.transport.is_closing():
            self.transport.close()

    def _refuse_headers(self) -> None:
        """431, then linger so a client still sending its headers can read the answer."""
        self._stop_timer()
        limit = self.limits.max_header_bytes
        self.transport.write(
            _answer(
                "431 Request Header Fields Too Large",
                "headers_too_large",
                f"The request's headers are larger than {limit} bytes.",
            )
        )
        if self.transport.can_write_eof():
            self._linger()
        else:
            self.transport.close()


class _LingeringTransport:
    """The connection's transport as a request's cycle sees it: its close lingers (module doc)."""

    def __init__(self, protocol: LimitedHttpProtocol) -> None:
        self._protocol = protocol
        self._transport = protocol.transport

    def close(self) -> None:
        self._protocol._close_after_answer()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)


def protocol_for(http: HttpConfig) -> type[LimitedHttpProtocol]:
    """The protocol class uvicorn should build connections from, with ``http``'s limits."""

    class ConfiguredHttpProtocol(LimitedHttpProtocol):
        limits = http

    return ConfiguredHttpProtocol


def fit_open_files_limit(max_connections: int) -> None:
    """Raise the soft RLIMIT_NOFILE (up to the hard one) to fit ``max_connections``.

    Below that, a flood would exhaust descriptors before the cap refuses it,
    and every request, ``/health`` included, would fail at accept.
    """
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = max_connections + RESERVED_FILES
    if soft == resource.RLIM_INFINITY or soft >= wanted:
        return
    raised = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
    if raised > soft:
        resource.setrlimit(resource.RLIMIT_NOFILE, (raised, hard))
        log.info("http.open_files_raised", extra={"from": soft, "to": raised})
    if raised < wanted:
        log.warning(
            "http.open_files_short",
            extra={"limit": raised, "needed": wanted, "key": "[http] max_connections"},
        )
