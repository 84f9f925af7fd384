"""Receiving ``POST /api/audio``: the multipart body streamed once into one temp file.

The body is read chunk by chunk from the ASGI stream and fed to
python-multipart's streaming parser. The bytes of the part named ``file``
go straight to a staging file in the system temp dir — as zero-copy slices
of the received chunks, written with ``os.writev`` in a thread a mebibyte
at a time while the next mebibyte is received — so memory stays flat
whatever the upload's size, and the file is written once. Other parts are
text fields (``callback_url``, ``language``, ``prompt``, ``/v1``'s options):
kept as text, within a small bound for all of them together.

With ``digest`` (an upload that carries an Idempotency-Key) the file bytes
are also fed to SHA-256 in the same writer thread, batch by batch, so the
digest costs no second read and no time on the event loop. A replay of a
known key is received by ``received_digest``: the same parser and hashing,
no file at all (ADR 21).

Each wait for the next chunk has the inactivity timeout, and the whole body
has a deadline (``[http] upload_deadline_seconds``, 6 hours by default,
SPEC §29): a slow upload passes within it, a stalled one does not hang, and
one that trickles a byte at a time cannot hold its connection for ever.
However the upload ends — refused, stalled, disconnected, cancelled — the
staging file is removed (the staging context manager owns that).

Of the sender's file name only ``extension_of`` survives; the name itself is
never kept, logged or echoed in an error.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import os
import threading
from collections.abc import AsyncGenerator, AsyncIterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import attrs
from python_multipart.exceptions import MultipartParseError
from python_multipart.multipart import MultipartParser, parse_options_header
from starlette.datastructures import Headers
from starlette.requests import ClientDisconnect, Request

from transcriber_adapters.localdisk import storage_errors
from transcriber_app.web.errors import ApiError
from transcriber_core.naming import extension_of, link_digest
from transcriber_core.ports import FileStore
from transcriber_core.tasks import wait_out

if TYPE_CHECKING:
    from python_multipart.multipart import MultipartCallbacks

#: Name of the form field that carries the recording.
FILE_FIELD = b"file"
#: Name of the optional form field with the URL to call when the job ends (ADR 35).
CALLBACK_FIELD = "callback_url"
#: Name of the form field that carries a link to the recording instead of ``file`` (SPEC §28).
URL_FIELD = "url"
#: Bytes of a body that are not the recording: part headers, boundaries, other fields.
ENVELOPE_BYTES = 64 * 1024
#: Gathered file bytes written in one ``writev``: few thread hops, bounded memory.
FLUSH_BYTES = 1024 * 1024
#: Most slices in one ``writev`` (Linux's IOV_MAX is 1024).
MAX_SLICES = 512
#: After a too-large body, read at most this much more, for this long, before the 413.
DRAIN_BYTES = 1024 * 1024
DRAIN_SECONDS = 1.0
#: Header that tells uvicorn to close the connection after an answer to an unread body.
CLOSE = {"Connection": "close"}


@attrs.frozen(kw_only=True)
class Received:
    """A recording received whole into a staging file."""

    #: The staging file; the store takes it by ``move``, or it is removed on exit.
    path: Path
    #: ``extension_of`` the sender's file name: the only part of it kept.
    extension: str
    #: Bytes of the recording.
    size: int
    #: SHA-256 of the recording, hex; None unless it was asked for.
    digest: str | None = None
    #: The form's other fields as sent, unchecked: name → values in order (UTF-8, bad bytes
    #: replaced). May carry a callback URL's secret or a prompt's names: never logged.
    fields: Mapping[str, tuple[str, ...]] = attrs.field(factory=dict, repr=False)

    def field(self, name: str) -> str | None:
        """The first value of the text field ``name``; None when the form has none."""
        values = self.fields.get(name)
        return values[0] if values else None

    @property
    def callback_url(self) -> str | None:
        """The form's ``callback_url`` as sent, unchecked; None without one."""
        return self.field(CALLBACK_FIELD)

    @property
    def url(self) -> str | None:
        """The form's ``url`` (a link instead of a file), unchecked; None without one."""
        return self.field(URL_FIELD)


def form_too_large(*, close: bool) -> ApiError:
    """The 413 answer to a form whose other fields and part headers pass ``ENVELOPE_BYTES``."""
    return ApiError(
        413,
        "form_too_large",
        f"the form's other fields and part headers are larger than {ENVELOPE_BYTES} bytes; "
        'send the recording in the field "file" alone',
        headers=CLOSE if close else None,
    )


def too_large(max_bytes: int, *, close: bool) -> ApiError:
    """The 413 answer; ``close`` when part of the body is left unread."""
    return ApiError(
        413,
        "too_large",
        f"the upload is larger than the limit of {max_bytes} bytes",
        headers=CLOSE if close else None,
    )


def check_declared_length(headers: Headers, max_bytes: int) -> None:
    """Refuse a body whose ``Content-Length`` says it is over the cap, before reading it."""
    declared = headers.get("content-length")
    if declared is None:
        return
    try:
        length = int(declared)
    except ValueError:
        raise ApiError(400, "bad_request", "Content-Length is not a number", CLOSE) from None
    if length > max_bytes + ENVELOPE_BYTES:
        raise too_large(max_bytes, close=True)


def boundary_of(headers: Headers) -> bytes:
    """The multipart boundary from ``Content-Type``; 415 when the body is not multipart."""
    content_type, options = parse_options_header(headers.get("content-type"))
    if content_type != b"multipart/form-data":
        raise ApiError(
            415,
            "not_multipart",
            'send the recording as multipart/form-data in the field "file"',
            CLOSE,
        )
    boundary = options.get(b"boundary")
    if not boundary or len(boundary) > 200:
        raise ApiError(400, "bad_multipart", "the multipart boundary is missing or invalid", CLOSE)
    return boundary


class Hasher(Protocol):
    """What the writer needs of a ``hashlib`` object."""

    def update(self, data: memoryview, /) -> None:
        """Add ``data`` to the digest."""


class _TooLarge(Exception):  # noqa: N818 - a signal out of the parser's callbacks
    """The recording passed its bound."""


class _Overdue(Exception):  # noqa: N818 - a signal out of the read
    """The body did not all arrive within the upload's deadline."""


class _FormTooLarge(Exception):  # noqa: N818 - a signal out of the parser's callbacks
    """One part header alone passed ``ENVELOPE_BYTES``: nothing more of the form is read."""


class _FormSink:
    """python-multipart callbacks: the ``file`` part gathered for the disk, the rest counted.

    Once the rest passes ``ENVELOPE_BYTES`` the form is ``overflowed``: it is
    read on to its end, every byte dropped (the whole body within the
    recording's bound), only to learn whether it has a ``file`` field at all —
    a recording sent in another field is ``missing_file``, not a form too large.

    The parser hands out slices of the chunk it is given (or of its
    boundary constant); both are immutable ``bytes``, so a memoryview of
    them stays valid until the write and nothing is copied.
    """

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self.size = 0
        self.extension = ""
        self.found = False
        self.ended = False
        self.pending: list[memoryview] = []
        self.pending_bytes = 0
        self._envelope = 0
        #: The other fields passed ``ENVELOPE_BYTES``: what follows is only looked at.
        self.overflowed = False
        self._dropped = 0
        self._in_file = False
        #: The text fields so far: name → each value's bytes, in order.
        self.texts: dict[str, list[bytearray]] = {}
        self._text: bytearray | None = None
        self._field = bytearray()
        self._value = bytearray()
        self._disposition: bytes | None = None

    def callbacks(self) -> MultipartCallbacks:
        """The callback table for ``MultipartParser``."""
        return {
            "on_part_begin": self._part_begin,
            "on_part_data": self._part_data,
            "on_part_end": self._part_end,
            "on_header_field": self._header_field,
            "on_header_value": self._header_value,
            "on_header_end": self._header_end,
            "on_headers_finished": self._headers_finished,
            "on_end": self._end,
        }

    def _count_envelope(self, length: int) -> None:
        self._envelope += length
        if self._envelope > ENVELOPE_BYTES:
            self.overflowed = True
        if self.overflowed:
            self._dropped += length
            if self._dropped > self.max_bytes:
                raise _TooLarge
            if len(self._field) + len(self._value) > ENVELOPE_BYTES:
                raise _FormTooLarge

    def _part_begin(self) -> None:
        self._disposition = None
        self._in_file = False
        self._text = None

    def _header_field(self, data: bytes, start: int, end: int) -> None:
        self._count_envelope(end - start)
        self._field += data[start:end]

    def _header_value(self, data: bytes, start: int, end: int) -> None:
        self._count_envelope(end - start)
        self._value += data[start:end]

    def _header_end(self) -> None:
        if self._field.strip().lower() == b"content-disposition":
            self._disposition = bytes(self._value)
        self._field.clear()
        self._value.clear()

    def _headers_finished(self) -> None:
        _, options = parse_options_header(self._disposition)
        name = options.get(b"name")
        if name is None:
            return
        if name != FILE_FIELD:
            self._text = bytearray()
            key = name.decode("utf-8", errors="replace")
            self.texts.setdefault(key, []).append(self._text)
            return
        if self.found:
            return
        self.found = True
        self._in_file = not self.overflowed
        filename = options.get(b"filename")
        # Browsers send the name as raw UTF-8; only its clean extension is kept.
        if filename is not None:
            self.extension = extension_of(filename.decode("utf-8", errors="replace"))

    def _part_data(self, data: bytes, start: int, end: int) -> None:
        length = end - start
        if not self._in_file:
            self._count_envelope(length)
            if self._text is not None and not self.overflowed:
                self._text += data[start:end]
            return
        self.size += length
        if self.size > self.max_bytes:
            raise _TooLarge
        self.pending.append(memoryview(data)[start:end])
        self.pending_bytes += length

    def _part_end(self) -> None:
        self._in_file = False
        self._text = None

    def fields(self) -> dict[str, tuple[str, ...]]:
        """The text fields, decoded."""
        return {
            name: tuple(value.decode("utf-8", errors="replace") for value in values)
            for name, values in self.texts.items()
        }

    def _end(self) -> None:
        self.ended = True

    def take_pending(self) -> list[memoryview]:
        """The gathered slices, handed over for writing."""
        slices, self.pending, self.pending_bytes = self.pending, [], 0
        return slices


def _write_all(
    fd: int | None, slices: list[memoryview], hasher: Hasher | None, stop: threading.Event
) -> None:
    """Hash and write every slice to ``fd`` in order, ``writev`` at a time; partial writes resumed.

    Without ``fd`` the slices are only hashed. hashlib lets go of the GIL on
    large inputs, so hashing here does not slow the event loop.
    """
    if hasher is not None:
        for view in slices:
            hasher.update(view)
    if fd is None:
        return
    index = 0
    while index < len(slices):
        if stop.is_set():
            return
        batch = slices[index : index + MAX_SLICES]
        written = os.writev(fd, batch)
        for view in batch:
            if written < len(view):
                slices[index] = view[written:]
                break
            written -= len(view)
            index += 1


class _Writer:
    """Writes batches of slices to the staging file in a thread, one batch in flight.

    The next batch gathers while the previous one is written, so a disk that
    stalls for a moment (dirty-page throttling) does not stall reading the
    socket; memory stays at two batches.
    """

    def __init__(self, fd: int | None, hasher: Hasher | None) -> None:
        self._fd = fd
        self._hasher = hasher
        self._stop = threading.Event()
        self._busy: asyncio.Future[None] | None = None

    async def write(self, slices: list[memoryview]) -> None:
        """Start writing ``slices`` once the batch before is written; do not wait for this one."""
        await self.drain()
        if slices:
            self._busy = asyncio.ensure_future(
                asyncio.to_thread(_write_all, self._fd, slices, self._hasher, self._stop)
            )

    async def drain(self) -> None:
        """Wait until the batch in flight is written; its OS error as ``StorageUnavailable``."""
        busy, self._busy = self._busy, None
        if busy is None:
            return
        try:
            with storage_errors():
                await asyncio.shield(busy)
        except asyncio.CancelledError:
            self._stop.set()
            await wait_out(busy)
            raise

    async def abandon(self) -> None:
        """Stop the batch in flight and wait for its thread; its outcome is dropped."""
        busy, self._busy = self._busy, None
        if busy is not None:
            self._stop.set()
            await wait_out(busy)


async def _drain(chunks: AsyncGenerator[bytes, None]) -> bool:
    """Read and drop what follows within ``DRAIN_SECONDS`` and ``DRAIN_BYTES``; True at its end.

    A client that sent a little too much gets a clean answer on a live
    connection; one that goes on sending is answered anyway, and cut off.
    """
    drained = 0
    with contextlib.suppress(TimeoutError, ClientDisconnect):
        async with asyncio.timeout(DRAIN_SECONDS):
            while drained <= DRAIN_BYTES:
                chunk = await anext(chunks, None)
                if chunk is None:
                    return True
                drained += len(chunk)
    return False


async def _pump(
    chunks: AsyncGenerator[bytes, None],
    parser: MultipartParser,
    sink: _FormSink,
    writer: _Writer,
    *,
    inactivity: float,
    deadline: float,
) -> None:
    """Feed the body to the parser and the file bytes to ``writer`` until the body ends.

    Raises ``TimeoutError`` after ``inactivity`` seconds without a chunk and
    ``_Overdue`` once ``deadline`` seconds have passed since the read began.
    """
    try:
        async with asyncio.timeout(deadline) as whole:
            await _pump_within(chunks, parser, sink, writer, inactivity)
    except TimeoutError:
        if whole.expired():
            raise _Overdue from None
        raise


async def _pump_within(
    chunks: AsyncGenerator[bytes, None],
    parser: MultipartParser,
    sink: _FormSink,
    writer: _Writer,
    inactivity: float,
) -> None:
    """``_pump`` without its deadline."""
    loop = asyncio.get_running_loop()
    # One timeout for the whole read, armed only while waiting for a chunk:
    # disk writes never count as the sender's silence.
    trailing = 0
    async with asyncio.timeout(None) as silence:
        while True:
            silence.reschedule(loop.time() + inactivity)
            chunk = await anext(chunks, None)
            silence.reschedule(None)
            if chunk is None:
                break
            if sink.ended:
                # The parser drops what follows the closing boundary; without a bound a
                # sender could hold the request open forever, never silent.
                trailing += len(chunk)
                if trailing > ENVELOPE_BYTES:
                    raise MultipartParseError("data after the end of the form")
            parser.write(chunk)
            if sink.pending_bytes >= FLUSH_BYTES or len(sink.pending) >= MAX_SLICES:
                await writer.write(sink.take_pending())
    await writer.write(sink.take_pending())
    await writer.drain()


async def _receive(
    chunks: AsyncGenerator[bytes, None],
    boundary: bytes,
    sink: _FormSink,
    writer: _Writer,
    *,
    inactivity: float,
    deadline: float,
) -> None:
    """Run the body through the parser into ``writer``; every way it can fail as ``ApiError``."""
    parser = MultipartParser(boundary, callbacks=sink.callbacks())
    try:
        await _pump(chunks, parser, sink, writer, inactivity=inactivity, deadline=deadline)
    except TimeoutError:
        raise ApiError(
            408, "upload_timeout", f"no data for {inactivity:g} s; upload aborted", CLOSE
        ) from None
    except _Overdue:
        raise ApiError(
            408,
            "upload_timeout",
            f"the upload did not arrive whole within {deadline:g} s; upload aborted",
            CLOSE,
        ) from None
    except _TooLarge:
        ended = await _drain(chunks)
        raise too_large(sink.max_bytes, close=not ended) from None
    except _FormTooLarge:
        ended = await _drain(chunks)
        raise form_too_large(close=not ended) from None
    except MultipartParseError:
        raise ApiError(400, "bad_multipart", "the multipart body is malformed", CLOSE) from None
    finally:
        await writer.abandon()
    if not sink.ended:
        raise ApiError(400, "bad_multipart", "the multipart body ended early")
    linked = URL_FIELD in sink.texts
    # No recording at all is told first, whatever else overflowed: the sender's mistake is
    # the field's name (``-F audio=@...``), not the form's size.
    if not sink.found and not linked:
        raise ApiError(
            400,
            "missing_file",
            'the form has no field "file"; send the recording in it (or a link in "url")',
        )
    if sink.overflowed:
        raise form_too_large(close=False)
    if sink.found and linked:
        raise ApiError(
            400,
            "file_and_url",
            'the form has both "file" and "url"; send the recording or a link to it, not both',
        )
    if sink.found and sink.size == 0:
        raise ApiError(400, "empty_file", "the uploaded file is empty")


@contextlib.asynccontextmanager
async def received_file(
    request: Request,
    *,
    files: FileStore,
    max_bytes: int,
    inactivity: float,
    deadline: float,
    digest: bool = False,
) -> AsyncIterator[Received]:
    """Stream the request's multipart body into a staging file; the recording inside the block.

    A form with a ``url`` instead of a ``file`` (SPEC §28) leaves the file
    empty: the caller takes ``Received.url``. With ``digest`` the
    recording's SHA-256 is computed on the way. Raises
    ``ApiError`` (400 bad form, missing or empty file, both file and url; 408 stalled or past
    ``deadline``; 413 too
    large or too many other fields; 415 not multipart) and
    ``ClientDisconnect``; in every case, and after the block unless the
    file was moved, the staging file is removed.
    """
    boundary = boundary_of(request.headers)
    sink = _FormSink(max_bytes)
    hasher = hashlib.sha256() if digest else None
    chunks = request.stream()
    try:
        async with files.staging("") as path:
            with storage_errors():
                fd = os.open(path, os.O_WRONLY | os.O_TRUNC)
            try:
                await _receive(
                    chunks,
                    boundary,
                    sink,
                    _Writer(fd, hasher),
                    inactivity=inactivity,
                    deadline=deadline,
                )
            finally:
                os.close(fd)
            yield Received(
                path=path,
                extension=sink.extension,
                size=sink.size,
                digest=None if hasher is None else hasher.hexdigest(),
                fields=sink.fields(),
            )
    finally:
        await chunks.aclose()


async def received_digest(
    request: Request, *, max_bytes: int, inactivity: float, deadline: float
) -> str:
    """Read the request's multipart body like ``received_file``, keeping only the file's SHA-256.

    For a replay of a known Idempotency-Key: the answer needs the digest,
    not the bytes, so nothing touches the disk. Same limits and errors. A
    form with a ``url`` answers the link's digest (``naming.link_digest``).
    """
    boundary = boundary_of(request.headers)
    sink = _FormSink(max_bytes)
    hasher = hashlib.sha256()
    chunks = request.stream()
    try:
        await _receive(
            chunks, boundary, sink, _Writer(None, hasher), inactivity=inactivity, deadline=deadline
        )
    finally:
        await chunks.aclose()
    if not sink.found:
        return link_digest(sink.fields()[URL_FIELD][0])
    return hasher.hexdigest()
