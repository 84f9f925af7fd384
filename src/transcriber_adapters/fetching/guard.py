"""``AddressGuard``: a forward proxy on 127.0.0.1 that connects only to addresses it checked.

yt-dlp makes its own connections (redirects, the extractor's requests,
manifests, segments, keys) through its own HTTP stacks, and no option of
it checks where they go. It is told to use this proxy for all of them
(ADR 87). For each request the guard resolves the host once, checks every
address against the rule it was given (``transcriber_core.addresses``'s,
or a test's), and connects to a checked address, never to the name again:
DNS has no second answer to give. A refused host gets a 403 and is counted
(``refused``), a host that does not resolve or answer a 502 (``failed``).

Plain ``http://`` requests come in absolute form and are sent on as one
request on one connection (``Connection: close`` both ways, so a kept-alive
connection can never carry a second request to another host). ``https://``
comes as ``CONNECT host:port``: the guard checks the address and then only
relays bytes, so it sees the address, not the TLS inside. ``close`` stops
taking connections and drops every one open, so a download blocked on a
read ends at once. Nothing here logs a host or a URL.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
from collections.abc import Callable
from types import TracebackType
from typing import Self
from urllib.parse import urlsplit

from transcriber_adapters import resolving
from transcriber_adapters.resolving import Lookup

#: Why an address may not be connected to, None when it may (``addresses.address_refusal``).
AddressRule = Callable[[str], str | None]

#: Largest request or response head relayed, in bytes.
MAX_HEAD = 64 * 1024
#: Bytes copied at a time.
CHUNK = 64 * 1024
#: Request headers that speak to the proxy, or keep a connection open: never passed on.
_HOP_HEADERS = frozenset(
    {"connection", "keep-alive", "proxy-connection", "proxy-authorization", "te", "upgrade"}
)
_REFUSED = b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
_FAILED = b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
_BAD = b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"


class _RefusedError(Exception):
    """The host has an address the rule refuses."""


class _FailedError(Exception):
    """The host did not resolve, or no checked address took the connection."""


class _BadRequestError(Exception):
    """Not a request this proxy relays."""


class AddressGuard:
    """One fetch's proxy: ``async with AddressGuard(rule=...) as guard:`` then use ``guard.url``.

    ``rule`` says why an address is refused (None when allowed); ``lookup``
    replaces the system resolver (tests); ``connect_timeout`` bounds one
    connection attempt to an upstream address.
    """

    def __init__(
        self,
        *,
        rule: AddressRule,
        lookup: Lookup | None = None,
        connect_timeout: float = 15.0,
    ) -> None:
        self._rule = rule
        self._lookup = lookup
        self._connect_timeout = connect_timeout
        self._server: asyncio.Server | None = None
        self._handlers: set[asyncio.Task[None]] = set()
        #: Requests refused because an address of their host is not allowed.
        self.refused = 0
        #: Requests whose host did not resolve or could not be reached.
        self.failed = 0
        #: ``(host, port)`` of every request relayed or refused, in order (for tests).
        self.hosts: list[tuple[str, int]] = []

    @property
    def url(self) -> str:
        """The proxy's URL for clients: ``http://127.0.0.1:<port>``."""
        if self._server is None:
            raise RuntimeError("the guard is not started")
        port = self._server.sockets[0].getsockname()[1]
        return f"http://127.0.0.1:{port}"

    async def start(self) -> None:
        """Listen on an ephemeral port of 127.0.0.1."""
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0, limit=MAX_HEAD)

    async def close(self) -> None:
        """Stop listening and drop every connection; return when every handler has ended."""
        if self._server is not None:
            self._server.close()
        for task in list(self._handlers):
            task.cancel()
        if self._handlers:
            await asyncio.gather(*self._handlers, return_exceptions=True)
        if self._server is not None:
            await self._server.wait_closed()

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        await self.close()

    async def _serve(self, client_in: asyncio.StreamReader, client: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        if task is not None:
            self._handlers.add(task)
        try:
            await self._handle(client_in, client)
        except asyncio.CancelledError:
            # ``close`` dropped the connection. Python 3.11's stream server reports a
            # handler that ends cancelled as an error in the log: it ends quietly instead.
            pass
        finally:
            client.close()
            if task is not None:
                self._handlers.discard(task)

    async def _handle(self, client_in: asyncio.StreamReader, client: asyncio.StreamWriter) -> None:
        """One request (or one tunnel), refused or relayed."""
        upstream: asyncio.StreamWriter | None = None
        try:
            head = await client_in.readuntil(b"\r\n\r\n")
            method, target, version, headers = _parse_head(head)
            if method == "CONNECT":
                host, port = _host_port(target)
                upstream_in, upstream = await self._open(host, port)
                client.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
                await _relay(client_in, client, upstream_in, upstream)
            else:
                host, port, path = _absolute(target)
                upstream_in, upstream = await self._open(host, port)
                upstream.write(_request_head(method, path, version, headers))
                await _relay(client_in, client, upstream_in, upstream, rewrite_response=True)
        except _RefusedError:
            self.refused += 1
            client.write(_REFUSED)
        except _FailedError:
            self.failed += 1
            client.write(_FAILED)
        except (_BadRequestError, asyncio.LimitOverrunError, ValueError):
            client.write(_BAD)
        except (asyncio.IncompleteReadError, ConnectionError):
            return
        finally:
            if upstream is not None:
                upstream.close()
        with contextlib.suppress(ConnectionError):
            await client.drain()

    async def _open(
        self, host: str, port: int
    ) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        """A connection to a checked address of ``host``; every address is checked first."""
        self.hosts.append((host, port))
        try:
            addresses = [str(ipaddress.ip_address(host))]
        except ValueError:
            try:
                infos = await resolving.resolve(host, port, lookup=self._lookup)
            except OSError:
                raise _FailedError() from None
            addresses = list(dict.fromkeys(str(info[4][0]) for info in infos))
        if not addresses:
            raise _FailedError()
        if any(self._rule(address) is not None for address in addresses):
            raise _RefusedError()
        for address in addresses:
            try:
                return await asyncio.wait_for(
                    asyncio.open_connection(address, port, limit=MAX_HEAD),
                    self._connect_timeout,
                )
            except (OSError, TimeoutError):
                continue
        raise _FailedError()


def _parse_head(head: bytes) -> tuple[str, str, str, list[tuple[str, str]]]:
    """Method, target, version and headers of a request head."""
    lines = head.decode("latin-1").split("\r\n")
    parts = lines[0].split(" ")
    if len(parts) != 3 or not parts[2].startswith("HTTP/"):
        raise _BadRequestError()
    headers = []
    for line in lines[1:]:
        if not line:
            continue
        name, colon, value = line.partition(":")
        if not colon or not name.strip():
            raise _BadRequestError()
        headers.append((name.strip(), value.strip()))
    return parts[0].upper(), parts[1], parts[2], headers


def _host_port(authority: str) -> tuple[str, int]:
    """``host:port`` (``[v6]:port``) of a CONNECT request."""
    parts = urlsplit(f"//{authority}")
    if not parts.hostname or parts.port is None:
        raise _BadRequestError()
    return parts.hostname, parts.port


def _absolute(target: str) -> tuple[str, int, str]:
    """Host, port and origin-form path of an absolute-form ``http://`` request target."""
    parts = urlsplit(target)
    if parts.scheme.lower() != "http" or not parts.hostname:
        raise _BadRequestError()
    path = parts.path or "/"
    if parts.query:
        path = f"{path}?{parts.query}"
    return parts.hostname, parts.port or 80, path


def _request_head(method: str, path: str, version: str, headers: list[tuple[str, str]]) -> bytes:
    """The request as the origin gets it: origin form, no hop headers, ``Connection: close``."""
    lines = [f"{method} {path} {version}"]
    lines += [f"{name}: {value}" for name, value in headers if name.lower() not in _HOP_HEADERS]
    lines += ["Connection: close", "", ""]
    return "\r\n".join(lines).encode("latin-1")


def _response_head(head: bytes) -> bytes:
    """The origin's response head with ``Connection: close`` in place of its own."""
    lines = head.decode("latin-1").split("\r\n")
    kept = [
        line
        for line in lines[1:]
        if line and line.partition(":")[0].strip().lower() not in {"connection", "keep-alive"}
    ]
    return "\r\n".join([lines[0], *kept, "Connection: close", "", ""]).encode("latin-1")


async def _relay(
    client_in: asyncio.StreamReader,
    client: asyncio.StreamWriter,
    upstream_in: asyncio.StreamReader,
    upstream: asyncio.StreamWriter,
    *,
    rewrite_response: bool = False,
) -> None:
    """Copy both ways until the origin has sent everything (or either side hangs up)."""

    async def down() -> None:
        if rewrite_response:
            client.write(_response_head(await upstream_in.readuntil(b"\r\n\r\n")))
        await _copy(upstream_in, client)

    sending = asyncio.ensure_future(_copy(client_in, upstream))
    try:
        await down()
    finally:
        sending.cancel()
        with contextlib.suppress(asyncio.CancelledError, ConnectionError):
            await sending


async def _copy(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
    """Bytes from ``source`` to ``sink`` until ``source`` ends."""
    while chunk := await source.read(CHUNK):
        sink.write(chunk)
        await sink.drain()
    if sink.can_write_eof():
        with contextlib.suppress(OSError):
            sink.write_eof()
