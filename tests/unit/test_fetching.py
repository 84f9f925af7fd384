"""Links fetched by yt-dlp reach public addresses only, for every connection (SPEC §28, ADR 87).

The site lives on 127.0.0.2, which the tests' rule lets through as if it
were public; a trap site on 127.0.0.1 stands for everything private and must
never be asked anything. The site is reached by names only the guard's
resolver knows, so a connection that bypassed the guard would fail.
"""

from __future__ import annotations

import asyncio
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import pytest

from tests.support import media_site
from tests.support.media_site import MediaSite
from transcriber_adapters.fetching import AddressGuard, YtDlpFetcher
from transcriber_adapters.fetching.ytdlp import THREAD_PREFIX
from transcriber_core.errors import FetchRefused, FetchUnavailable
from transcriber_core.ports import Fetched, FetchLimits

LIMITS = FetchLimits(max_bytes=10_000_000, max_seconds=3600.0)


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MediaSite]:
    """The site the fetches may reach (127.0.0.2)."""
    served = MediaSite(media_site.SITE_ADDRESS, tmp_path_factory.mktemp("site")).start()
    yield served
    served.stop()


@pytest.fixture(scope="module")
def trap(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MediaSite]:
    """A site on 127.0.0.1 that no fetch may reach."""
    served = MediaSite("127.0.0.1", tmp_path_factory.mktemp("trap")).start()
    yield served
    served.stop()


@pytest.fixture
def fetcher() -> YtDlpFetcher:
    """The adapter with the tests' rule and resolver."""
    return YtDlpFetcher(rule=media_site.rule, lookup=media_site.lookup)


async def fetch(fetcher: YtDlpFetcher, url: str, into: Path) -> Fetched:
    """``fetcher.fetch`` with roomy limits and no progress listener."""
    return await fetcher.fetch(url, into, limits=LIMITS, on_progress=lambda done, total: None)


async def assert_not_allowed(fetcher: YtDlpFetcher, url: str, into: Path) -> None:
    """The fetch ends ``url_not_allowed`` and leaves ``into`` empty."""
    with pytest.raises(FetchRefused) as refused:
        await fetch(fetcher, url, into)
    assert refused.value.code == "url_not_allowed"
    assert list(into.iterdir()) == []


def site_url(site: MediaSite, path: str) -> str:
    """A link to ``path`` on the site, by the name only the guard resolves."""
    return site.url(path, "site.test")


def test_site_names_are_unknown_to_the_system_resolver() -> None:
    """The premise of every test here: only the guard can find ``site.test``."""
    with pytest.raises(socket.gaierror):
        socket.getaddrinfo("site.test", 80)


async def test_every_request_goes_through_the_guard(
    fetcher: YtDlpFetcher, site: MediaSite, tmp_path: Path
) -> None:
    """The extractor's page request and the download both reach a site only the guard resolves."""
    before = len(site.requests)
    fetched = await fetch(fetcher, site_url(site, "/page.html"), tmp_path)
    assert fetched.path.read_bytes() == site.tone
    assert site.requests[before:][0] == "/page.html"
    assert "/tone.mp3" in site.requests[before:]


@pytest.mark.parametrize("inside", ["127.0.0.1", "inside.test"])
async def test_redirect_to_a_private_address_refused(
    fetcher: YtDlpFetcher, site: MediaSite, trap: MediaSite, tmp_path: Path, inside: str
) -> None:
    """A redirect to loopback, by address or by a name, is refused and never followed."""
    before = len(trap.requests)
    target = quote(trap.url("/tone.mp3", inside), safe="")
    await assert_not_allowed(fetcher, site_url(site, f"/redirect?to={target}"), tmp_path)
    assert trap.requests[before:] == []


@pytest.mark.parametrize("segment", ["trap", "http://lan.test/seg0.ts", "http://10.0.0.1/seg.ts"])
async def test_manifest_naming_a_private_host_refused(
    fetcher: YtDlpFetcher, site: MediaSite, trap: MediaSite, tmp_path: Path, segment: str
) -> None:
    """An HLS playlist whose segment is on loopback or a private network is refused."""
    before = len(trap.requests)
    if segment == "trap":
        segment = trap.url("/hls/seg0.ts")
    url = site_url(site, f"/manifest.m3u8?segment={quote(segment, safe='')}")
    await assert_not_allowed(fetcher, url, tmp_path)
    assert trap.requests[before:] == []


async def test_hls_playlist_fetched_whole(
    fetcher: YtDlpFetcher, site: MediaSite, tmp_path: Path
) -> None:
    """An HLS playlist's segments arrive in order, as one MPEG-TS file, with its duration."""
    fetched = await fetch(fetcher, site_url(site, "/hls/index.m3u8"), tmp_path)
    segments = sorted(
        (name for name in site.hls if name.endswith(".ts")), key=lambda n: int(n[3:-3])
    )
    assert fetched.path.read_bytes() == b"".join(site.hls[name] for name in segments)
    assert fetched.path.suffix == ".ts"
    assert fetched.duration == pytest.approx(3.0, abs=0.5)


@pytest.mark.parametrize(
    ("path", "permanent"),
    [
        ("/status?code=404", True),
        ("/status?code=410", True),
        ("/status?code=503", False),
        ("/status?code=429", False),
        (f"/manifest.m3u8?segment={quote('http://unknown.test/seg.ts', safe='')}", False),
    ],
)
async def test_failures_permanent_only_when_the_link_is_wrong(
    fetcher: YtDlpFetcher, site: MediaSite, tmp_path: Path, path: str, permanent: bool
) -> None:
    """A 4xx is ``unsupported_url`` for good; a 5xx, 429 or an unknown host is retried."""
    expected = FetchRefused if permanent else FetchUnavailable
    with pytest.raises(expected) as failed:
        await fetch(fetcher, site_url(site, path), tmp_path)
    if permanent:
        assert failed.value.code == "unsupported_url"  # type: ignore[attr-defined]
    assert list(tmp_path.iterdir()) == []


async def test_dash_manifest_fetched_whole(
    fetcher: YtDlpFetcher, site: MediaSite, tmp_path: Path
) -> None:
    """A DASH manifest's initialization and the 3 s of media segments arrive joined, in order."""
    before = len(site.requests)
    fetched = await fetch(fetcher, site_url(site, "/dash/index.mpd"), tmp_path)
    chunks = [path[6:] for path in site.requests[before:] if path.startswith("/dash/chunk-")]
    assert chunks == [f"chunk-stream0-0000{n}.m4s" for n in (1, 2, 3)]
    expected = site.dash["init-stream0.m4s"] + b"".join(site.dash[name] for name in chunks)
    assert fetched.path.read_bytes() == expected


async def test_check_refuses_before_downloading(
    fetcher: YtDlpFetcher, site: MediaSite, trap: MediaSite
) -> None:
    """The intake check refuses private hosts and playlists, and asks no server anything."""
    before = (len(site.requests), len(trap.requests))
    for url in (trap.url("/tone.mp3"), trap.url("/tone.mp3", "inside.test"), "http://10.0.0.1/"):
        with pytest.raises(FetchRefused) as refused:
            await fetcher.check(url)
        assert refused.value.code == "url_not_allowed"
    with pytest.raises(FetchRefused) as refused:
        await fetcher.check("https://soundcloud.com/someone/sets/a-set")
    assert refused.value.code == "playlist_not_supported"
    with pytest.raises(FetchUnavailable):
        await fetcher.check("http://unknown.test/a.mp3")
    await fetcher.check(site_url(site, "/page.html"))
    assert (len(site.requests), len(trap.requests)) == before


async def test_allow_private_lets_loopback_through(trap: MediaSite, tmp_path: Path) -> None:
    """``allow_private`` (the real rule, the system resolver) fetches from 127.0.0.1; off, not."""
    url = trap.url("/tone.mp3")
    on, off = tmp_path / "on", tmp_path / "off"
    on.mkdir()
    off.mkdir()
    fetched = await fetch(YtDlpFetcher(allow_private=True), url, on)
    assert fetched.path.read_bytes() == trap.tone
    await assert_not_allowed(YtDlpFetcher(), url, off)


async def test_cancelled_fetch_leaves_no_thread(
    fetcher: YtDlpFetcher, site: MediaSite, tmp_path: Path
) -> None:
    """After a cancelled fetch returns, yt-dlp's thread has ended and ``into`` is empty."""
    started = asyncio.Event()
    task = asyncio.ensure_future(
        fetcher.fetch(
            site_url(site, "/slow.bin"),
            tmp_path,
            limits=LIMITS,
            on_progress=lambda done, total: started.set(),
        )
    )
    await asyncio.wait_for(started.wait(), 30)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert not [t for t in threading.enumerate() if t.name.startswith(THREAD_PREFIX)]
    assert list(tmp_path.iterdir()) == []


async def _exchange(guard: AddressGuard, request: bytes) -> bytes:
    """Send ``request`` to the guard; everything it answers until it closes."""
    port = int(guard.url.rsplit(":", 1)[1])
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(request)
    await writer.drain()
    answer = await reader.read()
    writer.close()
    return answer


async def test_guard_tunnels_only_to_allowed_addresses(site: MediaSite, trap: MediaSite) -> None:
    """CONNECT is checked on the address: refused for loopback, a tunnel for the site."""
    async with AddressGuard(rule=media_site.rule, lookup=media_site.lookup) as guard:
        refused = await _exchange(
            guard, f"CONNECT inside.test:{trap.port} HTTP/1.1\r\n\r\n".encode()
        )
        assert refused.startswith(b"HTTP/1.1 403")
        port = int(guard.url.rsplit(":", 1)[1])
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(f"CONNECT site.test:{site.port} HTTP/1.1\r\n\r\n".encode())
        assert (await reader.readuntil(b"\r\n\r\n")).startswith(b"HTTP/1.1 200")
        writer.write(b"GET /tone.mp3 HTTP/1.1\r\nHost: site.test\r\nConnection: close\r\n\r\n")
        tunnelled = await reader.read()
        writer.close()
        assert tunnelled.startswith(b"HTTP/1.1 200")
        assert tunnelled.endswith(site.tone)
        assert guard.refused == 1


async def test_guard_closes_after_one_plain_request(site: MediaSite) -> None:
    """A plain request is relayed once with ``Connection: close``: no second host on it."""
    async with AddressGuard(rule=media_site.rule, lookup=media_site.lookup) as guard:
        answer = await _exchange(
            guard,
            f"GET {site_url(site, '/tone.mp3')} HTTP/1.1\r\nHost: site.test\r\n"
            "Connection: keep-alive\r\n\r\n".encode(),
        )
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.0 200") or head.startswith(b"HTTP/1.1 200")
    assert b"\r\nConnection: close" in head
    assert body == site.tone
