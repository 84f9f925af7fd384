"""The contract every MediaFetcher adapter passes (SPEC §28: links in)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path

import attrs
import pytest

from transcriber_core.errors import FetchRefused
from transcriber_core.ports import FetchLimits, MediaFetcher

#: Limits no link of the site comes near.
ROOMY = FetchLimits(max_bytes=100_000_000, max_seconds=86_400.0)
#: How long a cancelled fetch may take to stop, in seconds (generous: CI is loaded).
PROMPT = 10.0


@attrs.frozen(kw_only=True)
class FetcherSite:
    """Links the fetcher under test can reach, and what is behind each.

    A real adapter's are URLs of a local server; a fake's can be any
    strings it knows. Sizes are in bytes.
    """

    #: A direct link to a recording whose bytes are ``direct_bytes``.
    direct: str
    direct_bytes: bytes
    #: A page with one recording on it, titled ``title``.
    titled: str
    title: str
    #: A recording whose size is declared (before its bytes) as ``large_size``.
    large: str
    large_size: int
    #: A recording of ``undeclared_size`` bytes whose size is not declared: only counting tells.
    undeclared: str
    undeclared_size: int
    #: A recording declared to last ``long_seconds``.
    long: str
    long_seconds: float
    #: A link to more than one recording.
    playlist: str
    #: A recording that sends its first bytes and then nothing until the fetch hangs up.
    slow: str
    #: Returns once the site has seen the fetch of ``slow`` hang up.
    slow_ended: Callable[[], Awaitable[None]]


class MediaFetcherContract:
    """Subclass and provide two fixtures.

    * ``fetcher``: the ``MediaFetcher`` under test;
    * ``site``: a ``FetcherSite`` whose links that fetcher can reach.
    """

    @pytest.fixture
    def into(self, tmp_path: Path) -> Path:
        """The empty directory a fetch downloads into."""
        into = tmp_path / "fetch"
        into.mkdir()
        return into

    async def test_direct_file_fetched_whole(
        self, fetcher: MediaFetcher, site: FetcherSite, into: Path
    ) -> None:
        """A direct link's file arrives whole, inside ``into``."""
        fetched = await fetcher.fetch(site.direct, into, limits=ROOMY, on_progress=_ignore)
        assert fetched.path.parent == into
        assert fetched.path.read_bytes() == site.direct_bytes

    async def test_page_title_given(
        self, fetcher: MediaFetcher, site: FetcherSite, into: Path
    ) -> None:
        """A page's recording comes with the page's title."""
        fetched = await fetcher.fetch(site.titled, into, limits=ROOMY, on_progress=_ignore)
        assert fetched.title == site.title
        assert fetched.path.stat().st_size > 0

    async def test_declared_size_refused(
        self, fetcher: MediaFetcher, site: FetcherSite, into: Path
    ) -> None:
        """A declared size over the limit is ``too_large``, with nothing left in ``into``."""
        limits = FetchLimits(max_bytes=site.large_size // 2)
        await _assert_refused(fetcher, site.large, into, limits, "too_large")

    async def test_counted_size_refused_midway(
        self, fetcher: MediaFetcher, site: FetcherSite, into: Path
    ) -> None:
        """Bytes counted past the limit stop the download: ``too_large``, ``into`` left empty."""
        limits = FetchLimits(max_bytes=site.undeclared_size // 2)
        await _assert_refused(fetcher, site.undeclared, into, limits, "too_large")

    async def test_declared_duration_refused(
        self, fetcher: MediaFetcher, site: FetcherSite, into: Path
    ) -> None:
        """A declared duration over the limit is ``too_long`` before any download."""
        limits = FetchLimits(max_bytes=ROOMY.max_bytes, max_seconds=site.long_seconds / 2)
        await _assert_refused(fetcher, site.long, into, limits, "too_long")

    async def test_playlist_refused(
        self, fetcher: MediaFetcher, site: FetcherSite, into: Path
    ) -> None:
        """A link to several recordings is ``playlist_not_supported``; one item or nothing."""
        await _assert_refused(fetcher, site.playlist, into, ROOMY, "playlist_not_supported")

    async def test_progress_counts_grow_to_the_whole(
        self, fetcher: MediaFetcher, site: FetcherSite, into: Path
    ) -> None:
        """Progress is told in growing byte counts, ending at the file's size."""
        seen: list[tuple[int, int | None]] = []
        await fetcher.fetch(
            site.direct, into, limits=ROOMY, on_progress=lambda d, t: seen.append((d, t))
        )
        counts = [done for done, _ in seen]
        assert counts, "no progress was told"
        assert counts == sorted(set(counts))
        assert counts[-1] == len(site.direct_bytes)
        assert all(total in (None, len(site.direct_bytes)) for _, total in seen)

    async def test_cancellation_stops_promptly(
        self, fetcher: MediaFetcher, site: FetcherSite, into: Path
    ) -> None:
        """Cancelling a fetch mid-download ends it at once: the server sees it hang up."""
        started = asyncio.Event()
        fetch = asyncio.ensure_future(
            fetcher.fetch(site.slow, into, limits=ROOMY, on_progress=lambda d, t: started.set())
        )
        waiting = asyncio.ensure_future(started.wait())
        await asyncio.wait({fetch, waiting}, timeout=PROMPT, return_when=asyncio.FIRST_COMPLETED)
        waiting.cancel()
        assert started.is_set(), "the slow download never told progress"
        fetch.cancel()
        done, _ = await asyncio.wait({fetch}, timeout=PROMPT)
        assert fetch in done, "the cancelled fetch did not stop"
        assert fetch.cancelled()
        await asyncio.wait_for(site.slow_ended(), PROMPT)

    @pytest.mark.parametrize(
        "url", ["ftp://example.com/a.mp3", "file:///etc/passwd", "javascript:alert(1)"]
    )
    async def test_refused_scheme(self, fetcher: MediaFetcher, url: str, into: Path) -> None:
        """Only http(s): another scheme is ``url_not_allowed`` at the check and at the fetch."""
        with pytest.raises(FetchRefused) as refused:
            await fetcher.check(url)
        assert refused.value.code == "url_not_allowed"
        with pytest.raises(FetchRefused) as refused:
            await fetcher.fetch(url, into, limits=ROOMY, on_progress=_ignore)
        assert refused.value.code == "url_not_allowed"

    async def test_check_passes_a_fetchable_link(
        self, fetcher: MediaFetcher, site: FetcherSite
    ) -> None:
        """The intake check lets a link through that the fetch will take."""
        await fetcher.check(site.direct)
        await fetcher.check(site.titled)


async def _assert_refused(
    fetcher: MediaFetcher, url: str, into: Path, limits: FetchLimits, code: str
) -> None:
    """Fetching ``url`` under ``limits`` is ``FetchRefused(code)`` and leaves ``into`` empty."""
    with pytest.raises(FetchRefused) as refused:
        await fetcher.fetch(url, into, limits=limits, on_progress=_ignore)
    assert refused.value.code == code
    assert list(into.iterdir()) == []


def _ignore(done: int, total: int | None) -> None:
    """A progress callback that listens to nothing."""
