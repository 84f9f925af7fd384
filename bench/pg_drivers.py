"""psycopg 3 (async, psycopg-pool) against asyncpg on a queue's hot path, on this machine (ADR 32).

One round is what a worker does per job: a one-statement acquire
(``UPDATE … WHERE id = (SELECT … FOR UPDATE SKIP LOCKED LIMIT 1) RETURNING``)
and a fenced update (``… WHERE id = $1 AND acquisition_id = $2``), each its
own autocommitted statement on a pooled connection. ``--processes`` processes
each run ``--tasks`` concurrent tasks until the queue is empty; the figures
are jobs per second of wall time and the client processes' CPU time per job
(what the driver costs; it moves less than wall time when other programs
load the machine). Both drivers run the same SQL on the same
table, one after the other, in a database the script creates and drops.
asyncpg runs twice: as it comes (its pool sends a reset query each time a
connection goes back), and with that reset turned off, like psycopg-pool.

The project depends on psycopg only; asyncpg is for this comparison:
``pip install asyncpg`` first.

Usage: .venv/bin/python bench/pg_drivers.py [--url postgresql://postgres@127.0.0.1/postgres]
       [--jobs 20000] [--processes 4] [--tasks 4] [--rounds 3]
"""

from __future__ import annotations

import sys
from pathlib import Path

# bench/queue.py would shadow the stdlib ``queue`` that multiprocessing imports.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]

import argparse
import asyncio
import functools
import multiprocessing
import os
import secrets
import statistics
import time
from collections.abc import Callable, Coroutine
from concurrent.futures import ProcessPoolExecutor
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import psycopg

_TABLE = """
CREATE TABLE bench_jobs (
    id              text PRIMARY KEY,
    state           text NOT NULL,
    attempts        integer NOT NULL DEFAULT 0,
    acquisition_id  text,
    acquire_time    timestamptz,
    delay_time      timestamptz,
    created         timestamptz NOT NULL,
    updated         timestamptz NOT NULL
);
CREATE INDEX bench_jobs_state_created ON bench_jobs (state, created, id)
"""

# Positional parameters ($1 …) are asyncpg's only style; psycopg gets %s in the same places.
_ACQUIRE = (
    "UPDATE bench_jobs SET acquisition_id = {p1}, acquire_time = clock_timestamp(),"
    " attempts = attempts + 1, updated = clock_timestamp()"
    " WHERE id = (SELECT id FROM bench_jobs WHERE state = 'convert'"
    " AND (delay_time IS NULL OR delay_time <= clock_timestamp())"
    " AND (acquisition_id IS NULL OR acquire_time <= clock_timestamp() - interval '2 minutes')"
    " ORDER BY created, id LIMIT 1 FOR UPDATE SKIP LOCKED)"
    " RETURNING id, state, attempts, acquisition_id, acquire_time, delay_time, created, updated"
)
_SAVE = (
    "UPDATE bench_jobs SET state = 'done', attempts = 0, acquisition_id = NULL,"
    " acquire_time = NULL, updated = clock_timestamp()"
    " WHERE id = {p1} AND acquisition_id = {p2}"
)
PSYCOPG_ACQUIRE = _ACQUIRE.format(p1="%s")
PSYCOPG_SAVE = _SAVE.format(p1="%s", p2="%s")
ASYNCPG_ACQUIRE = _ACQUIRE.format(p1="$1")
ASYNCPG_SAVE = _SAVE.format(p1="$1", p2="$2")


def _with_db(url: str, name: str) -> str:
    parts = urlsplit(url)
    return urlunsplit(parts._replace(path=f"/{name}"))


def _fill(url: str, jobs: int) -> None:
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("DROP TABLE IF EXISTS bench_jobs")
        for statement in _TABLE.split(";"):
            conn.execute(statement)  # type: ignore[call-overload]
        with conn.cursor().copy("COPY bench_jobs (id, state, created, updated) FROM STDIN") as copy:
            for i in range(jobs):
                stamp = f"2026-12-01 00:00:00.{i % 1_000_000:06d}+00"
                copy.write_row((secrets.token_urlsafe(16), "convert", stamp, stamp))
        conn.execute("VACUUM ANALYZE bench_jobs")


async def _psycopg_worker(url: str, tasks: int) -> int:
    from psycopg_pool import AsyncConnectionPool  # noqa: PLC0415 - only this driver's run needs it

    async with AsyncConnectionPool(
        url, min_size=tasks, max_size=tasks, kwargs={"autocommit": True}, open=False
    ) as pool:
        await pool.wait()

        async def loop() -> int:
            done = 0
            while True:
                lease = secrets.token_urlsafe(16)
                async with pool.connection() as conn:
                    cursor = await conn.execute(PSYCOPG_ACQUIRE, (lease,))
                    row = await cursor.fetchone()
                if row is None:
                    return done
                async with pool.connection() as conn:
                    await conn.execute(PSYCOPG_SAVE, (row[0], lease))
                done += 1

        return sum(await asyncio.gather(*(loop() for _ in range(tasks))))


async def _no_reset(conn: Any) -> None:
    """Skip asyncpg's reset query on release (an extra round trip psycopg-pool does not make)."""


async def _asyncpg_worker(url: str, tasks: int, *, reset: bool = True) -> int:
    import asyncpg  # type: ignore[import-not-found,unused-ignore]  # noqa: PLC0415 - bench-only

    options: dict[str, Any] = {} if reset else {"reset": _no_reset}
    async with asyncpg.create_pool(url, min_size=tasks, max_size=tasks, **options) as pool:

        async def loop() -> int:
            done = 0
            while True:
                lease = secrets.token_urlsafe(16)
                async with pool.acquire() as conn:
                    row = await conn.fetchrow(ASYNCPG_ACQUIRE, lease)
                if row is None:
                    return done
                async with pool.acquire() as conn:
                    await conn.execute(ASYNCPG_SAVE, row[0], lease)
                done += 1

        return sum(await asyncio.gather(*(loop() for _ in range(tasks))))


WORKERS: dict[str, Callable[[str, int], Coroutine[Any, Any, int]]] = {
    "psycopg": _psycopg_worker,
    "asyncpg": _asyncpg_worker,
    "asyncpg, no reset on release": functools.partial(_asyncpg_worker, reset=False),
}


def _process(driver: str, url: str, tasks: int, start_at: float) -> tuple[int, float]:
    """Jobs done, and the CPU seconds this client process spent doing them."""
    # Every process starts its clock together, after its imports.
    time.sleep(max(0.0, start_at - time.time()))
    cpu = time.process_time()
    done = asyncio.run(WORKERS[driver](url, tasks))
    return done, time.process_time() - cpu


def _run(driver: str, url: str, args: argparse.Namespace) -> tuple[float, float]:
    """Jobs per second of wall time, and client CPU microseconds per job."""
    _fill(url, args.jobs)
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(args.processes, mp_context=context) as pool:
        start_at = time.time() + 2.0
        futures = [
            pool.submit(_process, driver, url, args.tasks, start_at) for _ in range(args.processes)
        ]
        results = [future.result() for future in futures]
        elapsed = time.time() - start_at
    done = sum(count for count, _ in results)
    if done != args.jobs:
        raise RuntimeError(f"{driver}: {done} jobs done of {args.jobs}")
    return done / elapsed, sum(cpu for _, cpu in results) / done * 1e6


def main() -> None:
    """Print jobs/s and CPU/job for each driver, medians of ``--rounds`` alternating runs."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--url",
        default=os.environ.get(
            "TRANSCRIBER_TEST_DATABASE_URL", "postgresql://postgres@127.0.0.1:5432/postgres"
        ),
    )
    parser.add_argument("--jobs", type=int, default=20_000)
    parser.add_argument("--processes", type=int, default=4)
    parser.add_argument("--tasks", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    name = f"bench_drivers_{os.getpid()}"
    with psycopg.connect(args.url, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')  # type: ignore[call-overload]
    url = _with_db(args.url, name)
    try:
        figures: dict[str, list[tuple[float, float]]] = {driver: [] for driver in WORKERS}
        for _ in range(args.rounds):
            for driver in WORKERS:
                figures[driver].append(_run(driver, url, args))
    finally:
        with psycopg.connect(args.url, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')  # type: ignore[call-overload]
    print(
        f"{args.jobs} jobs, {args.processes} processes x {args.tasks} tasks,"
        f" acquire + fenced update, {args.rounds} rounds"
    )
    for driver, values in figures.items():
        rates = [rate for rate, _ in values]
        cpus = [cpu for _, cpu in values]
        runs = ", ".join(f"{rate:,.0f}" for rate in rates)
        print(
            f"{driver:<30} {statistics.median(rates):8,.0f} jobs/s"
            f"  {statistics.median(cpus):6,.0f} µs client CPU/job  (runs: {runs})"
        )


if __name__ == "__main__":
    main()
