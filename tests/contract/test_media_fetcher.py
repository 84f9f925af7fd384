"""The media fetcher contract, run over every MediaFetcher adapter."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from tests.support import media_site
from tests.support.media_site import MediaSite
from transcriber_adapters.fetching import YtDlpFetcher
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
