"""Header attacks on the running service: /health latency and server memory while they last.

Prints its figures; the numbers in docs/benchmarks.md come from here.

Two attacks, each against a fresh ``python -m transcriber_app serve`` per
HTTP protocol of ``bench/server_variants.py`` (stock httptools, h11, ours):

- **slow headers**: ``--flood`` connections (1,000) each send a request line
  and half a header, then one more header byte every second, never ending;
- **huge header**: one connection sends a request line and then a header
  of ``--huge-mib`` (100) MiB as fast as loopback takes it.

While an attack runs, a probe opens a fresh connection for each of
``--probes`` ``GET /health`` requests, one after another, and times each
from connect to the last byte of the answer. Figures: the probe's p50, p99
and max latency, how many probes failed (refused, reset, not 200), and the
server's RSS (VmRSS with the flood in place; VmHWM peak, reset through
/proc/<pid>/clear_refs just before the attack).

The flood runs in its own thread (an asyncio loop) so the probe's timing
is not its bookkeeping. ``[http] max_connections`` is set above the flood
(``--max-connections``, 1,100) so the figure is latency, not refusals;
set it below to see the cap at work.

Usage: .venv/bin/python bench/headers.py [--flood 1000] [--probes 500] [--huge-mib 100]
       [--max-connections 1100] [--variants stock,h11,limited]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import resource
import socket
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # for tests.support.service, the real-server harness

from bench.server_variants import VARIANTS, command  # noqa: E402
from tests.support.service import Service, running_service  # noqa: E402

MIB = 1024 * 1024
HALF_REQUEST = b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: "
PROBE = b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"


def proc_status(pid: int, field: str) -> int:
    """A ``kB`` field of /proc/<pid>/status, in bytes."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1]) * 1024
    raise KeyError(field)


def probe_once(port: int) -> float | None:
    """Seconds for one ``GET /health`` on a fresh connection; None if it did not get 200."""
    started = time.perf_counter()
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=10.0) as sock:
            sock.sendall(PROBE)
            answer = bytearray()
            while chunk := sock.recv(65536):
                answer += chunk
    except OSError:
        return None
    if not answer.startswith(b"HTTP/1.1 200 "):
        return None
    return time.perf_counter() - started


def probe(port: int, count: int) -> tuple[list[float], int]:
    """``count`` probes one after another; their latencies and the number that failed."""
    latencies = []
    failed = 0
    for _ in range(count):
        latency = probe_once(port)
        if latency is None:
            failed += 1
        else:
            latencies.append(latency)
    return latencies, failed


class Flood:
    """``size`` connections stuck in their headers, one header byte each per second, in a thread."""

    def __init__(self, port: int, size: int) -> None:
        self.port = port
        self.size = size
        self.open = 0
        self.dropped = 0
        self._ready = threading.Event()
        self._stop: asyncio.Event | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread = threading.Thread(target=lambda: asyncio.run(self._main()), daemon=True)

    def __enter__(self) -> Flood:
        self._thread.start()
        self._ready.wait(60.0)
        return self

    def __exit__(self, *_: object) -> None:
        if self._loop is not None and self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(30.0)

    async def _main(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        writers = []
        for _ in range(self.size):
            try:
                _, writer = await asyncio.open_connection("127.0.0.1", self.port)
            except OSError:
                self.dropped += 1
                continue
            writer.write(HALF_REQUEST)
            writers.append(writer)
        self.open = len(writers)
        await asyncio.sleep(0.5)  # let the server take them all in
        self._ready.set()
        while not self._stop.is_set():
            for writer in writers:
                if not writer.is_closing():
                    writer.write(b"a")
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stop.wait(), 1.0)
        for writer in writers:
            writer.close()


def huge_header(port: int, mib: int) -> Callable[[], None]:
    """Start sending one header of ``mib`` MiB in a thread; a function that waits for the end."""
    chunk = b"a" * MIB

    def send() -> None:
        with (
            contextlib.suppress(OSError),
            socket.create_connection(("127.0.0.1", port), timeout=60.0) as sock,
        ):
            sock.sendall(HALF_REQUEST)
            for _ in range(mib):
                sock.sendall(chunk)
            sock.recv(65536)

    thread = threading.Thread(target=send, daemon=True)
    thread.start()
    return lambda: thread.join(120.0)


def report(name: str, latencies: list[float], failed: int, service: Service, extra: str) -> None:
    """Print one attack's figures."""
    pid = service.pid
    rss = proc_status(pid, "VmRSS") / MIB
    peak = proc_status(pid, "VmHWM") / MIB
    if len(latencies) >= 2:
        cuts = statistics.quantiles(latencies, n=100)
        p50, p99 = statistics.median(latencies) * 1000, cuts[98] * 1000
        timing = f"p50 {p50:.1f} ms, p99 {p99:.1f} ms, max {max(latencies) * 1000:.1f} ms"
    else:
        timing = "no probe answered"
    print(f"  {name}: /health {timing}; {failed} failed")
    print(f"    server RSS {rss:.1f} MiB, peak {peak:.1f} MiB; {extra}")


def run_variant(variant: str, args: argparse.Namespace) -> None:
    """Both attacks against one fresh server running ``variant``."""
    config = {"http": {"max_connections": args.max_connections}}
    with (
        tempfile.TemporaryDirectory() as tmp,
        running_service(Path(tmp), config=config, command=command(variant)) as service,
    ):
        pid = service.pid
        baseline = proc_status(pid, "VmRSS") / MIB
        quiet, failed = probe(service.port, args.probes)
        print(f"{variant}: RSS at rest {baseline:.1f} MiB")
        report("no attack", quiet, failed, service, "baseline")

        Path(f"/proc/{pid}/clear_refs").write_text("5")
        with Flood(service.port, args.flood) as flood:
            latencies, failed = probe(service.port, args.probes)
            extra = f"flood {flood.open} open, {flood.dropped} refused at connect"
            report(f"{args.flood} slow-header connections", latencies, failed, service, extra)

        Path(f"/proc/{pid}/clear_refs").write_text("5")
        started = time.perf_counter()
        wait = huge_header(service.port, args.huge_mib)
        latencies, failed = probe(service.port, args.probes)
        wait()
        extra = f"the header's connection ended after {time.perf_counter() - started:.2f} s"
        report(f"one {args.huge_mib} MiB header", latencies, failed, service, extra)
        service.stop()


def main() -> None:
    """Parse the arguments and run every variant."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--flood", type=int, default=1000, help="slow-header connections")
    parser.add_argument("--probes", type=int, default=500, help="/health requests per attack")
    parser.add_argument("--huge-mib", type=int, default=100, help="size of the huge header")
    parser.add_argument("--max-connections", type=int, default=1100, help="[http] setting")
    parser.add_argument(
        "--variants",
        default="stock,h11,limited",
        help=f"comma-separated HTTP protocols to compare, of {', '.join(VARIANTS)}",
    )
    args = parser.parse_args()
    variants = args.variants.split(",")
    unknown = set(variants) - set(VARIANTS)
    if unknown:
        parser.error(f"unknown variants: {', '.join(sorted(unknown))}")
    # The flood's sockets are this process's files too.
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = args.flood + 256
    if soft < wanted:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(wanted, hard), hard))
    for variant in variants:
        run_variant(variant, args)


if __name__ == "__main__":
    main()
