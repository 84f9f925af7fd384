"""``YtDlpFetcher``: links fetched by yt-dlp, every connection through an ``AddressGuard``.

yt-dlp (ADR 88) knows the sites: its extractors read a page (a video or
podcast site's, or any page with an ``<audio>``/``<video>`` element, an
HLS or DASH manifest) or take a direct media link, and its own
downloaders bring in the one recording, audio only where the site offers
it (``bestaudio/best``). It runs in a thread of its own; every connection
it makes goes through a guard started for the fetch (ADR 87), which is how
``url_not_allowed`` is decided for redirects, manifests and segments too.

What is refused, and when: a playlist (``noplaylist``, then any result that
is still one); a declared duration or size over the limits before a byte of
media is read, a declared length (``Content-Length``) at the first block,
bytes counted past ``max_bytes`` during the download; downloaders other than
yt-dlp's own (ffmpeg or an external program would connect on their own, so
yt-dlp is given no ffmpeg at all); no post-processing. On any failure, and on
cancellation, ``into`` is emptied once the thread has ended. Nothing from
yt-dlp reaches the logs: its messages carry URLs.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import importlib
import re
import shutil
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from transcriber_adapters import resolving
from transcriber_adapters.fetching.guard import AddressGuard, AddressRule
from transcriber_adapters.resolving import Lookup
from transcriber_core.addresses import address_refusal
from transcriber_core.errors import FetchRefused, FetchUnavailable
from transcriber_core.ports import Fetched, FetchLimits, FetchProgress
from transcriber_core.tasks import wait_out

#: The stable codes of ``FetchRefused`` this adapter raises.
NOT_ALLOWED = "url_not_allowed"
TOO_LARGE = "too_large"
TOO_LONG = "too_long"
PLAYLIST = "playlist_not_supported"
UNSUPPORTED = "unsupported_url"

#: The name of the thread each fetch runs yt-dlp in (a prefix: the pool numbers it).
THREAD_PREFIX = "transcriber-fetch"
#: Longest link taken, in characters.
MAX_URL_LENGTH = 2048
#: The one format asked for: the best audio-only one, else the best with audio and video.
FORMAT = "bestaudio/best"
#: yt-dlp's downloaders that make their connections through yt-dlp's own HTTP stack.
_NATIVE_DOWNLOADERS = frozenset({"HttpFD", "HlsFD", "DashSegmentsFD"})
#: HTTP statuses that say the link will not work if tried again.
_GONE_STATUSES = frozenset(range(400, 500)) - {408, 425, 429}


class _RefusedError(Exception):
    """Raised inside the thread (from a progress hook or a check) with the code it ends with."""

    def __init__(self, code: str) -> None:
        super().__init__(code)
        self.code = code


class _StoppedError(Exception):
    """Raised inside the thread from a progress hook once the fetch is cancelled."""


class YtDlpFetcher:
    """The ``MediaFetcher`` port on yt-dlp.

    ``allow_private`` (``[import] allow_private``) lets fetches reach
    loopback and private networks; ``rule`` replaces the address rule
    (tests: a loopback address let through as if public); ``lookup``
    replaces the system resolver (tests); ``socket_timeout`` bounds a
    connection that stops answering; ``retries`` is yt-dlp's own, per
    request and per segment, before the fetch fails (the job retries again).
    """

    def __init__(
        self,
        *,
        allow_private: bool = False,
        rule: AddressRule | None = None,
        lookup: Lookup | None = None,
        socket_timeout: float = 30.0,
        retries: int = 2,
    ) -> None:
        self._rule: AddressRule = rule or functools.partial(
            address_refusal, allow_private=allow_private
        )
        self._lookup = lookup
        self._socket_timeout = socket_timeout
        self._retries = retries

    async def check(self, url: str) -> None:
        """Refuse a scheme, a host or an obvious playlist before anything is downloaded."""
        host, port = _parse(url)
        if await asyncio.to_thread(_names_playlist, url):
            raise FetchRefused(PLAYLIST)
        await self._check_host(host, port)

    async def fetch(
        self, url: str, into: Path, *, limits: FetchLimits, on_progress: FetchProgress
    ) -> Fetched:
        """Download ``url``'s one recording into ``into`` (see the port)."""
        await self.check(url)
        loop = asyncio.get_running_loop()
        stop = threading.Event()
        reported = _Reporter(loop, on_progress)
        executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix=THREAD_PREFIX)
        async with AddressGuard(rule=self._rule, lookup=self._lookup) as guard:
            work = functools.partial(
                self._download,
                url,
                into,
                limits=limits,
                reported=reported,
                stop=stop,
                proxy=guard.url,
            )
            future = loop.run_in_executor(executor, work)
            try:
                fetched = await asyncio.shield(future)
            except asyncio.CancelledError:
                stop.set()
                await wait_out(asyncio.ensure_future(_wind_down(guard, future, into)))
                raise
            except _RefusedError as refused:
                _empty(into)
                raise FetchRefused(refused.code) from None
            except Exception as error:  # noqa: BLE001 - yt-dlp's own and anything under it
                _empty(into)
                if guard.refused:
                    raise FetchRefused(NOT_ALLOWED) from None
                raise _translated(error, unreachable=guard.failed > 0) from None
            finally:
                # The work is over by now: this only lets the idle thread exit.
                executor.shutdown(wait=True)
        return fetched

    async def _check_host(self, host: str, port: int) -> None:
        """``FetchRefused`` unless every address of ``host`` passes the rule."""
        try:
            infos = await resolving.resolve(host, port, lookup=self._lookup)
        except OSError:
            raise FetchUnavailable("the link's host does not resolve") from None
        addresses = [str(info[4][0]) for info in infos]
        if not addresses or any(self._rule(address) is not None for address in addresses):
            raise FetchRefused(NOT_ALLOWED)

    def _download(
        self,
        url: str,
        into: Path,
        *,
        limits: FetchLimits,
        reported: _Reporter,
        stop: threading.Event,
        proxy: str,
    ) -> Fetched:
        """In the fetch's thread: extract, check what is declared, download with counting."""
        yt_dlp = _yt_dlp()

        def hook(status: dict[str, Any]) -> None:
            if stop.is_set():
                raise _StoppedError()
            done = int(status.get("downloaded_bytes") or 0)
            total = status.get("total_bytes")
            total = int(total) if total else None
            if (total is not None and total > limits.max_bytes) or done > limits.max_bytes:
                raise _RefusedError(TOO_LARGE)
            reported(done, total)

        params = {
            "proxy": proxy,
            "format": FORMAT,
            "noplaylist": True,
            "extract_flat": "in_playlist",
            "playlist_items": "1:2",
            "quiet": True,
            "no_warnings": True,
            "noprogress": True,
            "logger": _Silent(),
            "cachedir": False,
            "retries": self._retries,
            "fragment_retries": self._retries,
            "extractor_retries": self._retries,
            "file_access_retries": 0,
            "skip_unavailable_fragments": False,
            "socket_timeout": self._socket_timeout,
            "fixup": "never",
            "external_downloader": {"default": "native"},
            # No ffmpeg for yt-dlp: it would open connections of its own.
            "ffmpeg_location": str(into / "no-ffmpeg"),
            "concurrent_fragment_downloads": 1,
            "hls_use_mpegts": True,
            "check_formats": False,
            "updatetime": False,
            "overwrites": True,
            "paths": {"home": str(into), "temp": str(into)},
        }
        with _closing(yt_dlp.YoutubeDL(params)) as ydl:
            info = ydl.extract_info(url, download=False)
            if stop.is_set():
                raise _StoppedError()
            if info.get("_type", "video") != "video":
                raise _RefusedError(PLAYLIST)
            _check_declared(info, limits)
            downloader = yt_dlp.downloader.get_suitable_downloader(info, ydl.params)
            if downloader is None or downloader.__name__ not in _NATIVE_DOWNLOADERS:
                raise _RefusedError(UNSUPPORTED)
            # HLS segments are written as they come, MPEG-TS (no remuxing: no ffmpeg).
            ext = "ts" if downloader.__name__ == "HlsFD" else _extension(info.get("ext"))
            target = into / f"media.{ext}"
            success = _download_with(downloader(ydl, ydl.params), info, target, hook)
        if stop.is_set():
            raise _StoppedError()
        if not success or not target.is_file():
            raise FetchUnavailable("the link's media could not be downloaded")
        size = target.stat().st_size
        if size > limits.max_bytes:
            raise _RefusedError(TOO_LARGE)
        reported(size, size)
        duration = info.get("duration")
        return Fetched(
            path=target,
            title=_title(info),
            duration=float(duration) if duration else None,
        )


async def _wind_down(guard: AddressGuard, work: asyncio.Future[Any], into: Path) -> None:
    """After a cancellation: drop the guard's connections, wait for yt-dlp, empty ``into``.

    Dropping the connections first ends a read blocked on a quiet server at
    once; the thread then fails at its next step or its progress hook.
    """
    await guard.close()
    await asyncio.wait({work})
    if not work.cancelled():
        work.exception()  # retrieved: the caller is raising its cancellation instead
    _empty(into)


@contextlib.contextmanager
def _closing(ydl: Any) -> Iterator[Any]:
    """``ydl`` closing every response it opened when the fetch ends.

    Extractors leave responses open (a direct link's first answer is only
    looked at): their sockets would linger until collected.
    """
    opened: list[Any] = []
    urlopen = ydl.urlopen

    def tracked(request: Any) -> Any:
        try:
            response = urlopen(request)
        except Exception as error:
            # An HTTP error carries the response it read the status from.
            opened.append(getattr(error, "response", None))
            raise
        opened.append(response)
        return response

    ydl.urlopen = tracked
    try:
        with ydl:
            yield ydl
    finally:
        for response in opened:
            with contextlib.suppress(Exception):
                if response is not None:
                    response.close()


def _download_with(
    downloader: Any, info: dict[str, Any], target: Path, hook: Callable[[dict[str, Any]], None]
) -> bool:
    """``downloader`` fetching ``info``'s format into ``target``; every file it opened closed.

    What ``YoutubeDL.dl`` does, less its debug output, plus the closing: a
    segment downloader whose segment fails leaves its output file open.
    """
    opened: list[Any] = []
    sanitize_open = downloader.sanitize_open

    def tracked(filename: str, mode: str) -> Any:
        stream, name = sanitize_open(filename, mode)
        opened.append(stream)
        return stream, name

    downloader.sanitize_open = tracked
    downloader.add_progress_hook(hook)
    try:
        success, _ = downloader.download(str(target), dict(info))
        return bool(success)
    finally:
        for stream in opened:
            with contextlib.suppress(Exception):
                stream.close()


class _Reporter:
    """Hands byte counts to the caller's callback on the event loop, only when they grow."""

    def __init__(self, loop: asyncio.AbstractEventLoop, on_progress: FetchProgress) -> None:
        self._loop = loop
        self._on_progress = on_progress
        self._last = -1

    def __call__(self, done: int, total: int | None) -> None:
        if done <= self._last:
            return
        self._last = done
        self._loop.call_soon_threadsafe(self._on_progress, done, total)


class _Silent:
    """yt-dlp's logger: says nothing (its messages name URLs and titles)."""

    def debug(self, message: str) -> None:
        """Dropped."""

    def info(self, message: str) -> None:
        """Dropped."""

    def warning(self, message: str) -> None:
        """Dropped."""

    def error(self, message: str) -> None:
        """Dropped."""


def _parse(url: str) -> tuple[str, int]:
    """Host and port of an http(s) link; ``FetchRefused`` for anything else."""
    if len(url) > MAX_URL_LENGTH or any(ch.isspace() or ord(ch) < 0x20 for ch in url):
        raise FetchRefused(NOT_ALLOWED)
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        raise FetchRefused(NOT_ALLOWED) from None
    scheme = parts.scheme.lower()
    if scheme not in {"http", "https"} or not parts.hostname or port == 0:
        raise FetchRefused(NOT_ALLOWED)
    return parts.hostname, port or (443 if scheme == "https" else 80)


def _check_declared(info: dict[str, Any], limits: FetchLimits) -> None:
    """Refuse what the extractor says is too long or too large, before downloading."""
    duration = info.get("duration")
    if limits.max_seconds is not None and duration and float(duration) > limits.max_seconds:
        raise _RefusedError(TOO_LONG)
    size = info.get("filesize") or info.get("filesize_approx")
    if size and int(size) > limits.max_bytes:
        raise _RefusedError(TOO_LARGE)


def _title(info: dict[str, Any]) -> str | None:
    """The recording's title as the site gives it.

    yt-dlp numbers the media elements of a page (``"<title> (1)"``) even when
    there is one; one is all a fetch takes, so the number goes.
    """
    title = info.get("title")
    if not title:
        return None
    text = str(title)
    if info.get("extractor") == "html5":
        text = text.removesuffix(" (1)")
    return text


def _extension(ext: object) -> str:
    """A file extension that is safe in a path: the site's when it is a short word."""
    text = str(ext or "").lower()
    return text if re.fullmatch(r"[a-z0-9]{1,10}", text) else "bin"


def _translated(error: Exception, *, unreachable: bool) -> Exception:
    """The port's error for what yt-dlp raised: permanent when the link itself is the cause.

    Permanent: an HTTP status saying the link is wrong (4xx but 408, 425,
    429), an extractor's expected error that no network error caused (no
    media there, an unsupported page). Anything else (no answer, a 5xx, a
    write that failed, a stream cut short) may pass: the job retries.
    """
    if isinstance(error, FetchRefused | FetchUnavailable):
        return error
    if unreachable:
        return FetchUnavailable("the link's server could not be reached")
    yt_dlp = _yt_dlp()
    causes: list[BaseException] = []
    cause: BaseException | None = error
    if isinstance(error, yt_dlp.utils.DownloadError) and error.exc_info:
        cause = error.exc_info[1]
    while cause is not None and len(causes) < 8:
        causes.append(cause)
        cause = getattr(cause, "cause", None) or cause.__cause__
    http = [c for c in causes if isinstance(c, yt_dlp.networking.exceptions.HTTPError)]
    if http:
        if http[0].status in _GONE_STATUSES:
            return FetchRefused(UNSUPPORTED)
        return FetchUnavailable(f"the link's server answered {http[0].status}")
    network = yt_dlp.networking.exceptions.RequestError
    if not any(isinstance(c, network) for c in causes) and any(
        isinstance(c, yt_dlp.utils.ExtractorError) and c.expected for c in causes
    ):
        return FetchRefused(UNSUPPORTED)
    return FetchUnavailable("the link's server could not be reached or answer whole")


def _names_playlist(url: str) -> bool:
    """True when the extractor yt-dlp would pick for ``url`` says it is a playlist's."""
    extractors = _yt_dlp().extractor.gen_extractor_classes()
    for extractor in extractors:
        if extractor.suitable(url):
            return bool(extractor.is_single_video(url) is False)
    return False


def _empty(into: Path) -> None:
    """Remove everything the fetch left in ``into`` (never ``into`` itself: the caller owns it)."""
    with contextlib.suppress(FileNotFoundError):
        for entry in into.iterdir():
            if entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry, ignore_errors=True)
            else:
                entry.unlink(missing_ok=True)


@functools.cache
def _yt_dlp() -> Any:
    """yt-dlp, imported on first use (seconds of extractors) with its plugins turned off.

    A plugin's code could open connections the guard never sees, so none is loaded.
    """
    globals_ = importlib.import_module("yt_dlp.globals")
    globals_.plugin_dirs.value = []
    module = importlib.import_module("yt_dlp")
    importlib.import_module("yt_dlp.downloader")
    importlib.import_module("yt_dlp.networking.exceptions")
    importlib.import_module("yt_dlp.extractor")
    return module
