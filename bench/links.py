"""How long a link's fetch takes through yt-dlp and the address guard (ADR 87, 88).

A ``MediaSite`` (tests/support/media_site.py) on 127.0.0.2 serves the 3 s
tone (about 24 KB) directly, on a page with an ``<audio>`` element, and as
an HLS playlist of four segments. Each link is fetched ``--rounds`` times by
one ``YtDlpFetcher`` (the tests' rule and resolver); the first fetch of the
process is timed on its own (it imports yt-dlp and its 1,800 extractors).
Prints the first fetch and p50/max of the rest, per link, in seconds.

Usage: .venv/bin/python bench/links.py [--rounds 10]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # for tests.support

from tests.support import media_site  # noqa: E402 - after the path
from tests.support.media_site import MediaSite  # noqa: E402

from transcriber_adapters.fetching import YtDlpFetcher  # noqa: E402
from transcriber_core.ports import FetchLimits  # noqa: E402

LIMITS = FetchLimits(max_bytes=100_000_000)


async def timed(fetcher: YtDlpFetcher, url: str) -> float:
    """Seconds one fetch of ``url`` takes, into a fresh directory."""
    with tempfile.TemporaryDirectory() as into:
        start = time.perf_counter()
        await fetcher.fetch(url, Path(into), limits=LIMITS, on_progress=lambda d, t: None)
        return time.perf_counter() - start


async def main(rounds: int) -> None:
    """Serve the site, fetch each link ``rounds`` times, print the figures."""
    with tempfile.TemporaryDirectory() as work:
        site = MediaSite(media_site.SITE_ADDRESS, Path(work)).start()
        try:
            fetcher = YtDlpFetcher(rule=media_site.rule, lookup=media_site.lookup)
            links = {
                "direct": site.url("/tone.mp3", "site.test"),
                "page": site.url("/page.html", "site.test"),
                "hls": site.url("/hls/index.m3u8", "site.test"),
            }
            first = await timed(fetcher, links["direct"])
            print(f"first fetch of the process (direct): {first:.2f} s")
            for name, url in links.items():
                times = [await timed(fetcher, url) for _ in range(rounds)]
                print(
                    f"{name}: p50 {statistics.median(times):.3f} s, max {max(times):.3f} s"
                    f" ({rounds} fetches)"
                )
        finally:
            site.stop()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=10)
    asyncio.run(main(parser.parse_args().rounds))
