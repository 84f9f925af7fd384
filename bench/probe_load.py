"""A status read under a flood of ``/health`` or ``/metrics`` with many jobs kept (red team 3).

Runs the real ``serve`` twice on SQLite, alternating variants in the same
run: this tree, and ``--before`` (a ``src`` folder of an earlier checkout,
e.g. main's, put first on ``PYTHONPATH``). Each gets a data dir holding
``--jobs`` done jobs (written with sqlite3 after a first start made the
schema), then: the p50 of ``--reads`` sequential ``GET /api/status/<id>``
with no load, while ``--clients`` threads call ``/health`` without pause,
and while they call ``/metrics``. Prints the figures and the ratios.

Usage: .venv/bin/python bench/probe_load.py --before /work/main/src
       [--jobs 150000] [--clients 30] [--reads 40]
"""

from __future__ import annotations

import argparse
import contextlib
import sqlite3
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.support.service import Service, running_service

PROBE_ID = "bench-probe-job-000000"


def fill(data_dir: Path, jobs: int) -> None:
    """``jobs`` done jobs and the probe's job, straight into the stopped service's database."""
    with contextlib.closing(sqlite3.connect(data_dir / "transcriber.db")) as conn, conn:
        now = time.time_ns() // 1000
        conn.execute(
            "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?)"
            " INSERT INTO jobs (id, state, origin_kind, text, created, updated)"
            " SELECT 'done-' || i, 'done', 'http', 'a short transcript', ? - i, ? - i FROM n",
            (jobs, now, now),
        )
        conn.execute(
            "INSERT INTO jobs (id, state, origin_kind, text, created, updated)"
            " VALUES (?, 'done', 'http', 'probe', ?, ?)",
            (PROBE_ID, now, now),
        )


@contextlib.contextmanager
def flood(service: Service, path: str, clients: int) -> Iterator[list[int]]:
    """``clients`` threads calling ``path`` without pause until the block ends; their count."""
    stop = threading.Event()
    done = [0]

    def hammer() -> None:
        with service.client(timeout=60) as client:
            while not stop.is_set():
                with contextlib.suppress(httpx.HTTPError):
                    client.get(path)
                    done[0] += 1

    threads = [threading.Thread(target=hammer, daemon=True) for _ in range(clients)]
    for thread in threads:
        thread.start()
    time.sleep(1.0)  # the flood under way before the reads start
    try:
        yield done
    finally:
        stop.set()
        for thread in threads:
            thread.join(timeout=60)


def status_p50(service: Service, reads: int) -> float:
    """Median milliseconds of ``reads`` sequential status reads of the probe's job."""
    times = []
    with service.client(timeout=60) as client:
        for _ in range(reads):
            started = time.perf_counter()
            assert client.get(f"/api/status/{PROBE_ID}").status_code == 200
            times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def measure(root: Path, env: dict[str, str], args: argparse.Namespace) -> dict[str, float]:
    """Start, fill, restart and measure one variant."""
    with running_service(root / "first", env=env) as first:
        data_dir = first.data_dir
    fill(data_dir, args.jobs)
    figures: dict[str, float] = {}
    with running_service(root / "run", env=env, data_dir=data_dir) as service:
        figures["idle"] = status_p50(service, args.reads)
        for path in ("/health", "/metrics"):
            with flood(service, path, args.clients) as done:
                started = time.monotonic()
                figures[path] = status_p50(service, args.reads)
                figures[f"{path} rps"] = done[0] / (time.monotonic() - started)
    return figures


def main() -> None:
    """Parse the options, measure both variants alternately, print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", required=True, help="src folder of the earlier code")
    parser.add_argument("--jobs", type=int, default=150_000)
    parser.add_argument("--clients", type=int, default=30)
    parser.add_argument("--reads", type=int, default=40)
    parser.add_argument("--rounds", type=int, default=1)
    args = parser.parse_args()
    here = str(Path(__file__).resolve().parent.parent / "src")
    results: dict[str, list[dict[str, float]]] = {"before": [], "after": []}
    with tempfile.TemporaryDirectory() as folder:
        for round_ in range(args.rounds):
            for name, src in (("before", args.before), ("after", here)):
                root = Path(folder) / f"{name}-{round_}"
                results[name].append(measure(root, {"PYTHONPATH": src}, args))
    print(f"{args.jobs} done jobs, {args.clients} flooding clients, {args.reads} status reads")
    for key in ("idle", "/health", "/metrics"):
        before = statistics.median(r[key] for r in results["before"])
        after = statistics.median(r[key] for r in results["after"])
        line = f"status read p50, {key:>8}: before {before:8.1f} ms, after {after:6.1f} ms"
        if key != "idle":
            rps_b = statistics.median(r[f"{key} rps"] for r in results["before"])
            rps_a = statistics.median(r[f"{key} rps"] for r in results["after"])
            line += f" ({before / after:.0f}x); flood {rps_b:.0f} -> {rps_a:.0f} answers/s"
        print(line)


if __name__ == "__main__":
    main()
