"""The baseline of ``bench/queue.py --postgres``: procrastinate running no-op tasks.

Defers N no-op tasks, then runs W worker processes until the queue is
empty, on a database of its own on the same PostgreSQL server. Prints one
JSON line with the figures, which ``bench/queue.py`` reads.

procrastinate is not a dependency of the project: run this with a Python
that has it, e.g. ``python3 -m venv /tmp/pv && /tmp/pv/bin/pip install
procrastinate``, then ``/tmp/pv/bin/python bench/procrastinate_queue.py
--dsn postgresql://postgres@127.0.0.1:5432/bench_procrastinate``.
"""

from __future__ import annotations

import sys
from pathlib import Path

# bench/queue.py shadows the stdlib module ``queue``: keep this folder off the path.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]

import argparse
import asyncio
import json
import multiprocessing
import time

import procrastinate


def make_app(dsn: str) -> procrastinate.App:
    """An app with one no-op task on ``dsn``."""
    app = procrastinate.App(connector=procrastinate.PsycopgConnector(conninfo=dsn))

    @app.task(name="noop")
    async def noop() -> None:
        return None

    return app


async def _defer(dsn: str, jobs: int) -> float:
    app = make_app(dsn)
    async with app.open_async():
        await app.schema_manager.apply_schema_async()
        started = time.perf_counter()
        task = app.tasks["noop"]
        # One job per defer, as the service creates one job per upload.
        for _ in range(jobs):
            await task.defer_async()
        return time.perf_counter() - started


async def _work(dsn: str, concurrency: int) -> None:
    app = make_app(dsn)
    async with app.open_async():
        await app.run_worker_async(
            wait=False, concurrency=concurrency, listen_notify=False, delete_jobs="never"
        )


def _worker_process(dsn: str, concurrency: int) -> None:
    asyncio.run(_work(dsn, concurrency))


def main() -> None:
    """Defer, then run the workers, and print the timings as JSON."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--dsn", required=True)
    parser.add_argument("--jobs", type=int, default=5000)
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--concurrency", type=int, default=3)
    args = parser.parse_args()

    defer_seconds = asyncio.run(_defer(args.dsn, args.jobs))
    started = time.perf_counter()
    workers = [
        multiprocessing.Process(target=_worker_process, args=(args.dsn, args.concurrency))
        for _ in range(args.workers)
    ]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    run_seconds = time.perf_counter() - started
    print(
        json.dumps(
            {
                "jobs": args.jobs,
                "defer_seconds": defer_seconds,
                "run_seconds": run_seconds,
                "jobs_per_second": args.jobs / (defer_seconds + run_seconds),
            }
        )
    )


if __name__ == "__main__":
    main()
