"""A web site on a loopback address for link fetches (SPEC §28): media, pages, manifests, traps.

``MediaSite`` serves, from a thread (so any event loop can use it):

- ``/tone.mp3``: a real recording (ffmpeg's tone), with its length declared;
- ``/page.html``: a page with a ``<title>`` and an ``<audio>`` element;
- ``/long.html``: a page whose JSON-LD declares a recording of an hour;
- ``/two.html``: a page with two ``<audio>`` elements (a playlist);
- ``/hls/index.m3u8``: an HLS playlist of the tone cut in segments;
- ``/dash/index.mpd``: a DASH manifest of the tone in fragmented MP4 segments;
- ``/large.bin``: ``LARGE`` bytes, declared; ``/undeclared.bin``: ``UNDECLARED``
  bytes sent without a length (the end is the connection's end);
- ``/slow.bin``: a declared length, ``SLOW_FIRST`` bytes, then nothing until
  the client hangs up, which ``slow_ended`` records;
- ``/status?code=N``: an answer with status N;
- ``/redirect?to=URL``: a 302 to ``URL``; ``/manifest.m3u8?segment=URL``:
  an HLS playlist whose one segment is ``URL``.

Every request's path is recorded in ``requests`` (a trap server asserts that
nothing reached it).
"""

from __future__ import annotations

import contextlib
import ipaddress
import json
import select
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar
from urllib.parse import parse_qs, urlsplit

from tests.support import media

#: The page's title, as the site gives it.
TITLE = "A lecture on loopback"
#: Bytes of ``/large.bin`` (declared) and ``/undeclared.bin`` (counted only).
LARGE = 3_000_000
UNDECLARED = 3_000_000
#: Bytes ``/slow.bin`` sends before it waits for the client to go, of ``SLOW_TOTAL`` declared.
SLOW_FIRST = 16_384
SLOW_TOTAL = 1_000_000
#: How long a handler waits for a client that never hangs up, in seconds (a test's bound).
PATIENCE = 30.0


class MediaSite:
    """The site, started with ``start()`` on ``host`` and stopped with ``stop()``."""

    def __init__(self, host: str, workdir: Path) -> None:
        self.host = host
        self.requests: list[str] = []
        self.slow_ended = threading.Event()
        self.tone = media.tone(workdir / "tone.mp3", 3.0).read_bytes()
        hls = workdir / "hls"
        hls.mkdir()
        media.generate(
            hls / "index.m3u8",
            *("-f", "lavfi", "-i", "sine=frequency=440:duration=3"),
            *("-c:a", "aac", "-f", "hls", "-hls_time", "1", "-hls_list_size", "0"),
            *("-hls_segment_filename", str(hls / "seg%d.ts")),
        )
        self.hls = {path.name: path.read_bytes() for path in hls.iterdir()}
        dash = workdir / "dash"
        dash.mkdir()
        media.generate(
            dash / "index.mpd",
            *("-f", "lavfi", "-i", "sine=frequency=440:duration=3", "-c:a", "aac"),
            *("-f", "dash", "-seg_duration", "1", "-use_template", "1", "-use_timeline", "0"),
        )
        self.dash = {path.name: path.read_bytes() for path in dash.iterdir()}
        self._server = ThreadingHTTPServer((host, 0), _Handler)
        self._server.daemon_threads = True
        self._server.site = self  # type: ignore[attr-defined]
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def port(self) -> int:
        """The port it listens on."""
        return int(self._server.server_address[1])

    def url(self, path: str, host: str | None = None) -> str:
        """``http://<host or the site's address>:<port><path>``."""
        return f"http://{host or self.host}:{self.port}{path}"

    def start(self) -> MediaSite:
        """Serve in a thread of its own."""
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and close the socket."""
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=10)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: Any
    pages: ClassVar[dict[str, str]] = {
        "/page.html": (
            f"<!DOCTYPE html><html><head><title>{TITLE}</title></head>"
            '<body><h1>Lecture</h1><audio controls src="/tone.mp3"></audio></body></html>'
        ),
        "/two.html": (
            "<!DOCTYPE html><html><head><title>Two</title></head><body>"
            '<audio src="/tone.mp3"></audio><audio src="/hls/index.m3u8"></audio>'
            "</body></html>"
        ),
    }

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - the base's name
        """Quiet."""

    def do_HEAD(self) -> None:
        """Answer as for GET, without the body."""
        self.do_GET()

    def do_GET(self) -> None:
        """Route by path."""
        site: MediaSite = self.server.site
        parts = urlsplit(self.path)
        query = {key: values[0] for key, values in parse_qs(parts.query).items()}
        site.requests.append(parts.path)
        path = parts.path
        if path == "/tone.mp3":
            self._send(200, site.tone, "audio/mpeg")
        elif path == "/long.html":
            self._send(200, self._long_page().encode(), "text/html; charset=utf-8")
        elif path in self.pages:
            self._send(200, self.pages[path].encode(), "text/html; charset=utf-8")
        elif path.startswith("/hls/") and path[5:] in site.hls:
            name = path[5:]
            kind = "application/vnd.apple.mpegurl" if name.endswith(".m3u8") else "video/mp2t"
            self._send(200, site.hls[name], kind)
        elif path.startswith("/dash/") and path[6:] in site.dash:
            name = path[6:]
            kind = "application/dash+xml" if name.endswith(".mpd") else "audio/mp4"
            self._send(200, site.dash[name], kind)
        elif path == "/redirect":
            self.send_response(302)
            self.send_header("Location", query["to"])
            self.send_header("Content-Length", "0")
            self.end_headers()
        elif path == "/manifest.m3u8":
            playlist = (
                "#EXTM3U\n#EXT-X-VERSION:3\n#EXT-X-TARGETDURATION:2\n#EXT-X-MEDIA-SEQUENCE:0\n"
                f"#EXTINF:1.0,\n{query['segment']}\n#EXT-X-ENDLIST\n"
            )
            self._send(200, playlist.encode(), "application/vnd.apple.mpegurl")
        elif path == "/status":
            self._send(int(query["code"]), b"an error page", "text/plain")
        elif path == "/large.bin":
            self._stream(LARGE, declared=True)
        elif path == "/undeclared.bin":
            self._stream(UNDECLARED, declared=False)
        elif path == "/slow.bin":
            self._slow(site)
        else:
            self._send(404, b"not here", "text/plain")

    def _long_page(self) -> str:
        """A page whose JSON-LD declares its recording (absolute: yt-dlp takes it as written)."""
        recording = {
            "@context": "https://schema.org",
            "@type": "AudioObject",
            "name": "Long",
            "contentUrl": f"http://{self.headers['Host']}/tone.mp3",
            "duration": "PT1H",
        }
        return (
            "<!DOCTYPE html><html><head><title>Long</title>"
            f'<script type="application/ld+json">{json.dumps(recording)}</script>'
            "</head><body></body></html>"
        )

    def _send(self, status: int, body: bytes, kind: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _stream(self, size: int, *, declared: bool) -> None:
        """``size`` bytes of audio/mpeg, declared or ended by closing the connection."""
        self.send_response(200)
        self.send_header("Content-Type", "audio/mpeg")
        if declared:
            self.send_header("Content-Length", str(size))
        else:
            self.send_header("Connection", "close")
            self.close_connection = True
        self.end_headers()
        if self.command == "HEAD":
            return
        block = b"\x00" * 65_536
        with contextlib.suppress(ConnectionError):
            for start in range(0, size, len(block)):
                self.wfile.write(block[: size - start])

    def _slow(self, site: MediaSite) -> None:
        """``SLOW_FIRST`` bytes of ``SLOW_TOTAL``, then wait until the client goes."""
        self.send_response(200)
        self.send_header("Content-Type", "audio/mpeg")
        self.send_header("Content-Length", str(SLOW_TOTAL))
        self.end_headers()
        if self.command == "HEAD":
            return
        with contextlib.suppress(ConnectionError):
            self.wfile.write(b"\x00" * SLOW_FIRST)
            self.wfile.flush()
            # Readable with nothing to read: the client has closed its end.
            select.select([self.connection], [], [], PATIENCE)
        site.slow_ended.set()
        self.close_connection = True


#: The site's address, let through by ``rule`` as if it were public.
SITE_ADDRESS = "127.0.0.2"
#: Names only ``lookup`` knows: a connection that did not go through the guard cannot find them.
NAMES = {"site.test": SITE_ADDRESS, "inside.test": "127.0.0.1", "lan.test": "10.0.0.1"}


async def lookup(host: str, port: int, family: int, kind: int) -> list[Any]:
    """The resolver the fetcher under test is given: ``NAMES`` and address literals only."""
    address = NAMES.get(host)
    with contextlib.suppress(ValueError):
        address = str(ipaddress.ip_address(host))
    if address is None:
        raise socket.gaierror(socket.EAI_NONAME, "unknown in the test")
    return [(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP, "", (address, port))]


def rule(address: str) -> str | None:
    """The tests' address rule: the site's address passes, every other one is refused."""
    return None if address == SITE_ADDRESS else "not the test site"
