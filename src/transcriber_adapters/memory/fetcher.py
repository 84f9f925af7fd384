"""A media fetcher that serves links from a map: for demos and tests (SPEC §28).

It reaches no network. Each link it knows is a ``Served`` recording: bytes,
a title, a declared size and duration, or a refusal. It keeps the port's
promises as the real adapter does: the declared size and duration are
judged against the limits before a byte is written, the bytes are counted
while they are written, progress is reported, a cancellation stops it at
once, and it writes only inside the folder it is given.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from pathlib import Path
from urllib.parse import urlsplit

import attrs

from transcriber_adapters._threads import in_thread
from transcriber_core.errors import FetchRefused, FetchUnavailable
from transcriber_core.ports import Fetched, FetchLimits, FetchProgress

#: Bytes written between two progress reports.
CHUNK_BYTES = 64 * 1024


@attrs.frozen(kw_only=True)
class Served:
    """What one link brings in."""

    data: bytes = attrs.field(default=b"", repr=False)
    #: The page's title; None: the site gives none.
    title: str | None = None
    #: The file's extension with its dot, as the site's format names it.
    extension: str = ".mp3"
    #: The size the site declares; None: it declares none (counted only).
    declared_bytes: int | None = None
    #: The length the site declares, in seconds; None: it does not say.
    duration: float | None = None
    #: A code refused at ``check`` already (``url_not_allowed``, ``playlist_not_supported``).
    refused_at_check: str | None = None
    #: A code refused by ``fetch`` (a redirect to a private address, no media on the page).
    refused: str | None = None
    #: ``fetch`` raises ``FetchUnavailable`` this many times before it works.
    unavailable_times: int = 0
    #: Sends its first chunk, then nothing until the fetch is cancelled (a stalled server).
    stalls: bool = False


@attrs.frozen(kw_only=True)
class FetchCall:
    """One ``fetch`` made on a MemoryFetcher."""

    url: str = attrs.field(repr=False)
    into: Path
    limits: FetchLimits


class MemoryFetcher:
    """Serves ``served`` links (and ``default`` for any other http(s) link, if given).

    A link that is neither is ``unsupported_url``; a scheme other than http(s)
    is ``url_not_allowed`` at ``check``. ``hold`` (an ``asyncio.Event``), once
    set up by ``pause_after_first_chunk``, stops every fetch after its first
    chunk until ``resume`` is called: a test then sees the progress and may
    delete or cancel the job mid-way. ``running`` counts fetches under way,
    ``calls`` records them.
    """

    def __init__(
        self, served: Mapping[str, Served] | None = None, *, default: Served | None = None
    ) -> None:
        self.served = dict(served or {})
        self.default = default
        self.calls: list[FetchCall] = []
        self.checks = 0
        self.running = 0
        self._failures: dict[str, int] = {}
        self._hold: asyncio.Event | None = None
        #: Set when a held fetch has written its first chunk and waits.
        self.waiting = asyncio.Event()
        #: Set when a fetch of a stalled link was cancelled (the server saw it hang up).
        self.hung_up = asyncio.Event()

    def reset(self) -> None:
        """Forget the calls and failures so far; the map stays."""
        self.calls.clear()
        self.checks = 0
        self._failures.clear()
        self._hold = None
        self.waiting = asyncio.Event()
        self.hung_up = asyncio.Event()

    def pause_after_first_chunk(self) -> None:
        """Make every fetch wait after its first chunk until ``resume``."""
        self._hold = asyncio.Event()
        self.waiting = asyncio.Event()

    def resume(self) -> None:
        """Let held fetches go on."""
        if self._hold is not None:
            self._hold.set()

    def _lookup(self, url: str) -> Served | None:
        return self.served.get(url, self.default)

    async def check(self, url: str) -> None:
        """Refuse a non-http(s) link, and what the map says is refused at once."""
        self.checks += 1
        if urlsplit(url).scheme not in ("http", "https") or not urlsplit(url).hostname:
            raise FetchRefused("url_not_allowed")
        served = self._lookup(url)
        if served is not None and served.refused_at_check is not None:
            raise FetchRefused(served.refused_at_check)

    async def fetch(
        self, url: str, into: Path, *, limits: FetchLimits, on_progress: FetchProgress
    ) -> Fetched:
        """Write the link's bytes into ``into`` chunk by chunk, within ``limits``."""
        self.calls.append(FetchCall(url=url, into=into, limits=limits))
        await self.check(url)
        served = self._lookup(url)
        if served is None:
            raise FetchRefused("unsupported_url")
        if served.refused is not None:
            raise FetchRefused(served.refused)
        failed = self._failures.get(url, 0)
        if failed < served.unavailable_times:
            self._failures[url] = failed + 1
            raise FetchUnavailable("the link's server did not answer")
        if served.declared_bytes is not None and served.declared_bytes > limits.max_bytes:
            raise FetchRefused("too_large")
        if (
            served.duration is not None
            and limits.max_seconds is not None
            and served.duration > limits.max_seconds
        ):
            raise FetchRefused("too_long")
        self.running += 1
        path = into / f"media{served.extension}"
        try:
            await self._write(path, served, limits, on_progress)
        except BaseException:
            # Refused or cancelled half-way: nothing of it stays in ``into``.
            path.unlink(missing_ok=True)
            raise
        finally:
            self.running -= 1
        return Fetched(path=path, title=served.title, duration=served.duration)

    async def _write(
        self, path: Path, served: Served, limits: FetchLimits, on_progress: FetchProgress
    ) -> None:
        data = served.data
        written = 0
        for start in range(0, max(len(data), 1), CHUNK_BYTES):
            chunk = data[start : start + CHUNK_BYTES]
            if written + len(chunk) > limits.max_bytes:
                raise FetchRefused("too_large")
            await in_thread(_append, path, chunk)
            written += len(chunk)
            on_progress(written, served.declared_bytes)
            if self._hold is not None and not self._hold.is_set():
                self.waiting.set()
                await self._hold.wait()
            if served.stalls:
                try:
                    await asyncio.Event().wait()
                finally:
                    self.hung_up.set()
            # Every chunk gives a cancellation its chance, as a socket read would.
            await asyncio.sleep(0)


def _append(path: Path, chunk: bytes) -> None:
    with path.open("ab") as out:
        out.write(chunk)
