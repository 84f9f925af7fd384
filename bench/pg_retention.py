"""Retention sweep batches on PostgreSQL: one sweeper, and several at once on their own pools.

Makes a database, fills it with ``--jobs`` done jobs that ended 40 days
ago, each with two file records (recording and converted audio; no bytes:
this measures the database's side of the sweep), runs ``ANALYZE``, then
drains ``remove_ended_jobs`` (``--stage jobs``) or ``remove_ended_files``
(``--stage files``) in batches of ``--batch`` with ``--sweepers``
repositories at once, each on a ``Database`` of its own (a pool of one
connection, as another host would have). It prints jobs/s and checks that
every job and file record was handed to exactly one sweeper. The database
is dropped at the end. "Now" is the database's clock.

Usage: .venv/bin/python bench/pg_retention.py [--url postgresql://postgres@127.0.0.1/postgres]
       [--jobs 100000] [--stage jobs|files] [--batch 500] [--sweepers 1 2]
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
from urllib.parse import urlsplit, urlunsplit

import psycopg

from transcriber_adapters.postgres import Database, PostgresJobRepository
from transcriber_core.ports import Removed

_FILL_FILES = (
    "INSERT INTO files (id, location, size, extension, created)"
    " SELECT %(prefix)s || g, 'local', 5, %(extension)s, now()"
    " FROM generate_series(1, %(count)s) AS g"
)
_FILL_JOBS = (
    "INSERT INTO jobs (id, state, origin_kind, source_file_id, converted_file_id, text,"
    " created, updated, ended)"
    " SELECT 'j' || g, 'done', 'http', 's' || g, 'c' || g, 'a transcript of a few words',"
    " now(), now(), now() - interval '40 days' + g * interval '1 microsecond'"
    " FROM generate_series(1, %(count)s) AS g"
)


async def fill(url: str, count: int) -> None:
    """``count`` ended jobs with two file records each, analysed."""
    database = await Database.open(url, pool_size=1)
    try:
        async with database.transaction() as conn:
            await conn.execute(_FILL_FILES, {"prefix": "s", "extension": ".mp3", "count": count})
            await conn.execute(_FILL_FILES, {"prefix": "c", "extension": ".ogg", "count": count})
            await conn.execute(_FILL_JOBS, {"count": count})
        await database.execute("ANALYZE")
    finally:
        await database.close()


async def drain(repo: PostgresJobRepository, stage: str, batch: int) -> list[Removed]:
    """Batches until one comes back empty."""
    taken = []
    while True:
        if stage == "jobs":
            removed = await repo.remove_ended_jobs(age=timedelta(days=31), limit=batch)
        else:
            removed = await repo.remove_ended_files(age=timedelta(days=8), limit=batch)
        if not removed.jobs:
            return taken
        taken.append(removed)


async def sweep(url: str, count: int, stage: str, batch: int, sweepers: int) -> None:
    """Drain with ``sweepers`` repositories at once; print the rate and check each thing once."""
    databases = [await Database.open(url, pool_size=1) for _ in range(sweepers)]
    try:
        repos = [PostgresJobRepository(database) for database in databases]
        started = time.perf_counter()
        results = await asyncio.gather(*(drain(repo, stage, batch) for repo in repos))
        seconds = time.perf_counter() - started
    finally:
        for database in databases:
            await database.close()
    jobs = [job for result in results for removed in result for job in removed.jobs]
    files = [f.id for result in results for removed in result for f in removed.files]
    assert len(jobs) == len(set(jobs)) == count, (len(jobs), len(set(jobs)))
    assert len(files) == len(set(files)) == 2 * count, (len(files), len(set(files)))
    shares = "/".join(str(sum(len(r.jobs) for r in result)) for result in results)
    print(
        f"stage={stage} jobs={count} sweepers={sweepers} batch={batch}"
        f" seconds={seconds:.2f} jobs_per_s={count / seconds:,.0f} shares={shares}"
    )


def main() -> None:
    """Parse the options; for each sweeper count, a database made and dropped for the run."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", default="postgresql://postgres@127.0.0.1:5432/postgres")
    parser.add_argument("--jobs", type=int, default=100_000)
    parser.add_argument("--stage", choices=("jobs", "files"), default="jobs")
    parser.add_argument("--batch", type=int, default=500)
    parser.add_argument("--sweepers", type=int, nargs="+", default=[1, 2])
    args = parser.parse_args()
    for sweepers in args.sweepers:
        name = f"transcriber_bench_retention_{os.getpid()}_{sweepers}"
        with psycopg.connect(args.url, autocommit=True) as admin:
            admin.execute(f'CREATE DATABASE "{name}"')  # type: ignore[arg-type]
        try:
            url = urlunsplit(urlsplit(args.url)._replace(path=f"/{name}"))
            asyncio.run(fill(url, args.jobs))
            asyncio.run(sweep(url, args.jobs, args.stage, args.batch, sweepers))
        finally:
            with psycopg.connect(args.url, autocommit=True) as admin:
                admin.execute(f'DROP DATABASE "{name}" WITH (FORCE)')  # type: ignore[arg-type]


if __name__ == "__main__":
    main()
