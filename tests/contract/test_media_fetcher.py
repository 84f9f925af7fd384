"""The media fetcher contract, run over every MediaFetcher adapter."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from tests.support import media_site
from tests.support.media_site import MediaSite
from transcriber_adapters.fetching import YtDlpFetcher
from transcriber_adapters.memory import MemoryFetcher, Served
from transcriber_contracts.fetcher import FetcherSite, MediaFetcherContract


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MediaSite]:
    """One site for the module, on the address the tests' rule lets through."""
    site = MediaSite(media_site.SITE_ADDRESS, tmp_path_factory.mktemp("site")).start()
    yield site
    site.stop()


class TestYtDlpFetcher(MediaFetcherContract):
    """yt-dlp behind the address guard keeps the contract, on a site reached by name."""

    @pytest.fixture
    def fetcher(self) -> YtDlpFetcher:
        return YtDlpFetcher(rule=media_site.rule, lookup=media_site.lookup)

    @pytest.fixture
    def site(self, served: MediaSite) -> FetcherSite:
        served.slow_ended.clear()

        async def slow_ended() -> None:
            assert await asyncio.to_thread(served.slow_ended.wait, media_site.PATIENCE)

        def url(path: str) -> str:
            return served.url(path, "site.test")

        return FetcherSite(
            direct=url("/tone.mp3"),
            direct_bytes=served.tone,
            titled=url("/page.html"),
            title=media_site.TITLE,
            large=url("/large.bin"),
            large_size=media_site.LARGE,
            undeclared=url("/undeclared.bin"),
            undeclared_size=media_site.UNDECLARED,
            long=url("/long.html"),
            long_seconds=3600.0,
            playlist=url("/two.html"),
            slow=url("/slow.bin"),
            slow_ended=slow_ended,
        )


#: The memory fetcher's site: links are keys of its map, nothing is reached.
_DIRECT = b"\x01" * 150_000
_UNDECLARED = 300_000


class TestMemoryFetcher(MediaFetcherContract):
    """The fake the app's tests and the demo use keeps the same contract."""

    @pytest.fixture
    def fetcher(self) -> MemoryFetcher:
        return MemoryFetcher(
            {
                "https://site.test/tone.mp3": Served(data=_DIRECT),
                "https://site.test/page.html": Served(data=_DIRECT, title=media_site.TITLE),
                "https://site.test/large.bin": Served(data=_DIRECT, declared_bytes=10**9),
                "https://site.test/undeclared.bin": Served(data=b"\x02" * _UNDECLARED),
                "https://site.test/long.html": Served(data=_DIRECT, duration=3600.0),
                "https://site.test/two.html": Served(refused_at_check="playlist_not_supported"),
                "https://site.test/slow.bin": Served(data=_DIRECT, stalls=True),
            }
        )

    @pytest.fixture
    def site(self, fetcher: MemoryFetcher) -> FetcherSite:
        async def slow_ended() -> None:
            await fetcher.hung_up.wait()

        return FetcherSite(
            direct="https://site.test/tone.mp3",
            direct_bytes=_DIRECT,
            titled="https://site.test/page.html",
            title=media_site.TITLE,
            large="https://site.test/large.bin",
            large_size=10**9,
            undeclared="https://site.test/undeclared.bin",
            undeclared_size=_UNDECLARED,
            long="https://site.test/long.html",
            long_seconds=3600.0,
            playlist="https://site.test/two.html",
            slow="https://site.test/slow.bin",
            slow_ended=slow_ended,
        )
