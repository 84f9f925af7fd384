"""``queue_position`` at a long queue: the bounded count against the unbounded one (red team 3).

Fills ``jobs`` with ``--queued`` jobs waiting in ``convert`` (SQLite file,
and PostgreSQL with ``--postgres``), then times the status read's position
query for the last job in the queue, alternating, on one connection: the
statement before the fix (a count of every job ahead) and the repository's
``queue_position`` (a count that stops at ``QUEUE_POSITION_LIMIT``). Prints
the medians and their ratio, measured in the same run.

Usage: .venv/bin/python bench/queue_position.py [--queued 100000] [--reads 40]
       [--postgres postgresql://postgres@127.0.0.1:5432/postgres]
"""

from __future__ import annotations

import sys
from pathlib import Path

# bench/queue.py would shadow the stdlib ``queue`` that sqlite3 and psycopg import.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]

import argparse
import asyncio
import os
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from datetime import timedelta
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import psycopg

from transcriber_adapters.postgres import Database, PostgresJobRepository
from transcriber_adapters.postgres import statements as pg_sql
from transcriber_adapters.sqlite import SqliteJobRepository
from transcriber_adapters.sqlite import statements as sqlite_sql
from transcriber_adapters.sqlite.times import to_db
from transcriber_adapters.system import SystemClock
from transcriber_core.policy import QUEUE_POSITION_LIMIT

LEASE = timedelta(minutes=2)
#: The statements as they were before the limit: the LIMIT taken out again.
_LIMIT = f" LIMIT {QUEUE_POSITION_LIMIT}"
SQLITE_BEFORE = sqlite_sql.QUEUE_POSITION_SQL.replace(
    "(SELECT count(*) FROM (SELECT 1 FROM", "(SELECT count(*) FROM"
).replace(f"{_LIMIT}))", ")")
PG_BEFORE = pg_sql.QUEUE_POSITION_SQL.replace(
    "(SELECT count(*) FROM (SELECT 1 FROM", "(SELECT count(*) FROM"
).replace(f"{_LIMIT}) AS ahead)", ")")


async def alternate(
    reads: int, before: Callable[[], Awaitable[Any]], after: Callable[[], Awaitable[Any]]
) -> tuple[float, float]:
    """Median milliseconds of ``before`` and ``after``, run alternately ``reads`` times each."""
    times: dict[str, list[float]] = {"before": [], "after": []}
    for _ in range(reads):
        for name, call in (("before", before), ("after", after)):
            started = time.perf_counter()
            await call()
            times[name].append((time.perf_counter() - started) * 1000)
    return statistics.median(times["before"]), statistics.median(times["after"])


def report(label: str, queued: int, before: float, after: float) -> None:
    """One line of figures."""
    print(
        f"{label:>10}, {queued} queued: unbounded count {before:.2f} ms,"
        f" bounded {after:.2f} ms p50 ({before / after:.0f}x)"
    )


async def sqlite_run(queued: int, reads: int) -> None:
    """Fill a SQLite file and time both statements."""
    with tempfile.TemporaryDirectory() as folder:
        repo = await SqliteJobRepository.open(Path(folder) / "bench.db")
        try:
            start = to_db(SystemClock().now())
            fill = (
                "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?)"
                " INSERT INTO jobs (id, state, origin_kind, created, updated)"
                " SELECT 'q' || i, 'convert', 'http', ? + i, ? + i FROM n"
            )

            def run_fill(conn: Any) -> None:
                conn.execute(fill, (queued, start, start))

            await repo._call(run_fill)
            last = f"q{queued}"
            cutoff = to_db(SystemClock().now() - LEASE)

            def unbounded(conn: Any) -> Any:
                return conn.execute(SQLITE_BEFORE, {"id": last, "lease_cutoff": cutoff}).fetchall()

            before, after = await alternate(
                reads,
                lambda: repo._call(unbounded),
                lambda: repo.queue_position(last, lease=LEASE),
            )
            report("SQLite", queued, before, after)
        finally:
            await repo.close()


async def postgres_run(url: str, queued: int, reads: int) -> None:
    """Fill a fresh PostgreSQL database and time both statements."""
    database = await Database.open(url, pool_size=1)
    try:
        async with database.connection() as conn:
            await conn.execute(
                "INSERT INTO jobs (id, state, origin_kind, created, updated)"
                " SELECT 'q' || g, 'convert', 'http', now() + g * interval '1 ms', now()"
                " FROM generate_series(1, %(count)s) AS g",
                {"count": queued},
            )
        await database.execute("ANALYZE jobs")
        repo = PostgresJobRepository(database)
        last = f"q{queued}"
        params = {"id": last, "lease": LEASE, "now": None}
        before, after = await alternate(
            reads,
            lambda: database.fetchone(PG_BEFORE, params),  # type: ignore[arg-type]
            lambda: repo.queue_position(last, lease=LEASE),
        )
        report("PostgreSQL", queued, before, after)
    finally:
        await database.close()


def main() -> None:
    """Parse the options and run each store."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queued", type=int, default=100_000)
    parser.add_argument("--reads", type=int, default=40)
    parser.add_argument("--postgres", default=None)
    args = parser.parse_args()
    assert SQLITE_BEFORE != sqlite_sql.QUEUE_POSITION_SQL
    assert PG_BEFORE != pg_sql.QUEUE_POSITION_SQL
    asyncio.run(sqlite_run(args.queued, args.reads))
    if args.postgres:
        name = f"transcriber_bench_position_{os.getpid()}"
        with psycopg.connect(args.postgres, autocommit=True) as admin:
            admin.execute(f'CREATE DATABASE "{name}"')  # type: ignore[arg-type]
        try:
            url = urlunsplit(urlsplit(args.postgres)._replace(path=f"/{name}"))
            asyncio.run(postgres_run(url, args.queued, args.reads))
        finally:
            with psycopg.connect(args.postgres, autocommit=True) as admin:
                admin.execute(f'DROP DATABASE "{name}" WITH (FORCE)')  # type: ignore[arg-type]


if __name__ == "__main__":
    main()
