"""The PostgreSQL acquire statement's plan and cost, before and after ``ANALYZE jobs`` (ADR 39).

Makes a database, fills ``jobs`` with ``--done`` finished jobs and
``--queued`` jobs waiting in ``convert`` (a third of them short), then
prints the execution time and the scan of ``ACQUIRE_SQL`` and
``ACQUIRE_SHORT_SQL`` under ``EXPLAIN ANALYZE`` twice: on the statistics a
fresh bulk of inserts leaves (none yet), and after ``ANALYZE``. Then
``PostgresJobRepository.acquire`` in a loop on one connection. The
database is dropped at the end.

Usage: .venv/bin/python bench/pg_acquire_plan.py [--url postgresql://postgres@127.0.0.1/postgres]
       [--done 50000] [--queued 5000] [--acquires 500]
"""

from __future__ import annotations

import sys
from pathlib import Path

# bench/queue.py would shadow the stdlib ``queue`` that psycopg imports.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]

import argparse
import asyncio
import os
import time
from datetime import timedelta
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import psycopg

from transcriber_adapters.postgres import Database, PostgresJobRepository
from transcriber_adapters.postgres import statements as sql
from transcriber_core.entities import State

_FILL = (
    "INSERT INTO jobs (id, state, origin_kind, created, updated, short)"
    " SELECT %(prefix)s || g, %(state)s, 'http', now() + g * interval '1 ms', now(), g %% 3 = 0"
    " FROM generate_series(1, %(count)s) AS g"
)


def _params(name: str) -> dict[str, Any]:
    return {"state": "convert", "acquisition_id": name, "lease": timedelta(minutes=2), "now": None}


async def explain(database: Database, label: str) -> None:
    """Print each acquire's scan and execution time under EXPLAIN ANALYZE (it leases a job)."""
    async with database.connection() as conn:
        for lane, statement in (("general", sql.ACQUIRE_SQL), ("express", sql.ACQUIRE_SHORT_SQL)):
            cursor = await conn.execute(f"EXPLAIN ANALYZE {statement}", _params(label + lane))  # type: ignore[arg-type]
            lines = [row[0] for row in await cursor.fetchall()]
            scan = next(line.strip() for line in lines if "Scan" in line)
            total = next(line for line in lines if line.startswith("Execution Time"))
            print(f"{label:>14} {lane:>8}: {total}; {scan.split('  (')[0]}")


async def run(url: str, done: int, queued: int, acquires: int) -> None:
    """Fill, explain before and after ANALYZE, then time acquires through the repository."""
    database = await Database.open(url, pool_size=1)
    try:
        async with database.connection() as conn:
            await conn.execute(_FILL, {"prefix": "d", "state": "done", "count": done})
            await conn.execute(_FILL, {"prefix": "q", "state": "convert", "count": queued})
        await explain(database, "no statistics")
        await database.execute("ANALYZE jobs")
        await explain(database, "analysed")
        repo = PostgresJobRepository(database)
        started = time.perf_counter()
        for n in range(acquires):
            await repo.acquire(State.CONVERT, acquisition_id=f"a{n}", lease=timedelta(minutes=2))
        elapsed = time.perf_counter() - started
        print(f"repository acquire, one connection: {elapsed / acquires * 1000:.2f} ms each")
    finally:
        await database.close()


def main() -> None:
    """Parse the options and run on a database made and dropped for the run."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", default="postgresql://postgres@127.0.0.1:5432/postgres")
    parser.add_argument("--done", type=int, default=50_000)
    parser.add_argument("--queued", type=int, default=5_000)
    parser.add_argument("--acquires", type=int, default=500)
    args = parser.parse_args()
    name = f"transcriber_bench_plan_{os.getpid()}"
    with psycopg.connect(args.url, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')  # type: ignore[arg-type]
    try:
        url = urlunsplit(urlsplit(args.url)._replace(path=f"/{name}"))
        print(f"{args.done} done jobs, {args.queued} queued in convert (a third short)")
        asyncio.run(run(url, args.done, args.queued, args.acquires))
    finally:
        with psycopg.connect(args.url, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE "{name}" WITH (FORCE)')  # type: ignore[arg-type]


if __name__ == "__main__":
    main()
