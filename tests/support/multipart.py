"""Multipart bodies and raw HTTP/1.1 exchanges, for uploads a normal client would not send.

httpx sends a whole, well-formed request; the tests of ``POST /api/audio``
also need a body that stops halfway, stalls, lies about its length, or is
answered before it is sent. ``RawClient`` writes exactly the bytes given
on a plain socket and reads whatever the server answers.
"""

from __future__ import annotations

import contextlib
import socket
import time
from collections.abc import Iterator

import attrs

BOUNDARY = "test-boundary-5d1c8f"
CONTENT_TYPE = f"multipart/form-data; boundary={BOUNDARY}"


def part(name: str, data: bytes, *, filename: str | None = None) -> bytes:
    """One form part with its boundary line and headers; the file name is sent as raw UTF-8."""
    disposition = f'form-data; name="{name}"'
    if filename is not None:
        disposition += f'; filename="{filename}"'
    head = f"--{BOUNDARY}\r\nContent-Disposition: {disposition}\r\n"
    if filename is not None:
        head += "Content-Type: application/octet-stream\r\n"
    return head.encode() + b"\r\n" + data + b"\r\n"


def closing() -> bytes:
    """The closing boundary line of a form."""
    return f"--{BOUNDARY}--\r\n".encode()


def form(data: bytes, filename: str = "voice.mp3") -> bytes:
    """A whole form whose ``file`` field holds ``data``."""
    return part("file", data, filename=filename) + closing()


def chunked(pieces: Iterator[bytes] | list[bytes]) -> bytes:
    """``pieces`` in HTTP/1.1 chunked transfer coding, with the final empty chunk."""
    coded = b"".join(b"%x\r\n%s\r\n" % (len(piece), piece) for piece in pieces if piece)
    return coded + b"0\r\n\r\n"


@attrs.frozen
class RawResponse:
    """What the server answered: status, lower-cased headers, body."""

    status: int
    headers: dict[str, str]
    body: bytes


def request_head(path: str, headers: dict[str, str], *, method: str = "POST", port: int) -> bytes:
    """The request line and headers of an HTTP/1.1 request to 127.0.0.1."""
    lines = [f"{method} {path} HTTP/1.1", f"Host: 127.0.0.1:{port}"]
    lines.extend(f"{name}: {value}" for name, value in headers.items())
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


class RawClient:
    """One TCP connection to the service, written and read by hand."""

    def __init__(self, port: int, timeout: float = 10.0) -> None:
        self.port = port
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)

    def __enter__(self) -> RawClient:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def send(self, data: bytes) -> None:
        """Write ``data``; a server that already closed is not an error here."""
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            self.sock.sendall(data)

    def send_head(self, path: str, headers: dict[str, str], method: str = "POST") -> None:
        """Write a request line and headers."""
        self.send(request_head(path, headers, method=method, port=self.port))

    def response(self) -> RawResponse:
        """Read one response (Content-Length or chunked body); AssertionError on a silent server."""
        buffer = b""
        while b"\r\n\r\n" not in buffer:
            buffer += self._recv("the response head")
        head, _, rest = buffer.partition(b"\r\n\r\n")
        status_line, *header_lines = head.decode("latin-1").split("\r\n")
        headers = {}
        for line in header_lines:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        if "content-length" in headers:
            length = int(headers["content-length"])
            while len(rest) < length:
                rest += self._recv("the response body")
            body = rest[:length]
        else:
            while not rest.endswith(b"0\r\n\r\n"):
                rest += self._recv("the chunked response body")
            body = _unchunk(rest)
        return RawResponse(int(status_line.split()[1]), headers, body)

    def is_closed_by_server(self, wait: float = 5.0) -> bool:
        """True when the server closes the connection within ``wait`` seconds."""
        deadline = time.monotonic() + wait
        self.sock.settimeout(0.1)
        while time.monotonic() < deadline:
            try:
                if self.sock.recv(65536) == b"":
                    return True
            except TimeoutError:
                continue
            except ConnectionResetError:
                return True
        return False

    def close(self) -> None:
        """Close the connection (a client that goes away mid-upload)."""
        self.sock.close()

    def _recv(self, what: str) -> bytes:
        try:
            data = self.sock.recv(65536)
        except TimeoutError:
            raise AssertionError(f"the server sent no {what} in time") from None
        if not data:
            raise AssertionError(f"the server closed the connection before {what}")
        return data


def _unchunk(data: bytes) -> bytes:
    body = b""
    while True:
        size_line, _, data = data.partition(b"\r\n")
        size = int(size_line, 16)
        if size == 0:
            return body
        body, data = body + data[:size], data[size + 2 :]
