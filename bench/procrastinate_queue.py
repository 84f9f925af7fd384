"""The baseline of ``bench/queue.py --postgres``: procrastinate running no-op tasks.

W processes of C tasks each defer N no-op tasks (one ``defer`` per task),
then W worker processes of concurrency C run them until the queue is empty,
on a database of its own on the same PostgreSQL server: the shape
``bench/queue.py`` gives the job repository. Prints one JSON line with the
figures, which ``bench/queue.py`` reads.

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
from collections.abc import Callable
from typing import Any

import procrastinate


def make_app(dsn: str) -> procrastinate.App:
    """An app with one no-op task on ``dsn``."""
    app = procrastinate.App(connector=procrastinate.PsycopgConnector(conninfo=dsn))

    @app.task(name="noop")
    async def noop() -> None:
        return None

    return app


async def _apply_schema(dsn: str) -> None:
    app = make_app(dsn)
    async with app.open_async():
        await app.schema_manager.apply_schema_async()


async def _defer(dsn: str, jobs: int, concurrency: int) -> None:
    app = make_app(dsn)
    async with app.open_async():
        task = app.tasks["noop"]

        async def deferrer(count: int) -> None:
            # One job per defer, as the service creates one job per upload.
            for _ in range(count):
                await task.defer_async()

        await asyncio.gather(*(deferrer(jobs // concurrency) for _ in range(concurrency)))


async def _analyze(dsn: str) -> None:
    app = make_app(dsn)
    async with app.open_async():
        await app.connector.execute_query_async("ANALYZE procrastinate_jobs")


def _defer_process(dsn: str, jobs: int, concurrency: int) -> None:
    asyncio.run(_defer(dsn, jobs, concurrency))


async def _work(dsn: str, concurrency: int) -> None:
    app = make_app(dsn)
    async with app.open_async():
        await app.run_worker_async(
            wait=False, concurrency=concurrency, listen_notify=False, delete_jobs="never"
        )


def _worker_process(dsn: str, concurrency: int) -> None:
    asyncio.run(_work(dsn, concurrency))


def _run_processes(target: Callable[..., None], args: tuple[Any, ...], count: int) -> None:
    """Run ``count`` processes of ``target(*args)`` to their end."""
    processes = [multiprocessing.Process(target=target, args=args) for _ in range(count)]
    for process in processes:
        process.start()
    for process in processes:
        process.join()
        if process.exitcode != 0:
            raise RuntimeError(f"a procrastinate process failed ({process.exitcode})")


def main() -> None:
    """Defer, then run the workers, and print the timings as JSON."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--dsn", required=True)
    parser.add_argument("--jobs", type=int, default=5000)
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--concurrency", type=int, default=3)
    parser.add_argument("--analyze", action="store_true", help="ANALYZE between the phases")
    args = parser.parse_args()

    asyncio.run(_apply_schema(args.dsn))
    share = args.jobs // args.workers // args.concurrency * args.concurrency
    jobs = share * args.workers
    started = time.perf_counter()
    _run_processes(_defer_process, (args.dsn, share, args.concurrency), args.workers)
    defer_seconds = time.perf_counter() - started
    if args.analyze:
        asyncio.run(_analyze(args.dsn))
    started = time.perf_counter()
    _run_processes(_worker_process, (args.dsn, args.concurrency), args.workers)
    run_seconds = time.perf_counter() - started
    print(
        json.dumps(
            {
                "jobs": jobs,
                "defer_seconds": defer_seconds,
                "run_seconds": run_seconds,
                "jobs_per_second": jobs / (defer_seconds + run_seconds),
            }
        )
    )


if __name__ == "__main__":
    main()
