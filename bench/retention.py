"""Retention sweep speed and memory on SQLite with real files on disk (ADR 36).

Prints its figures; the numbers in docs/benchmarks.md come from here.

For each N: a fresh data dir holds N ended jobs, each with a recording and
its converted audio as real (tiny) files in the filesystem store, written
straight through the repository's own statements. A fresh child process
then runs the core's ``sweep`` once on the SQLite repository and the
filesystem store, its clock 31 days after the jobs ended, so every job,
file record and file goes. It reports jobs/s and its peak RSS; the RSS is
the child's own, so it holds nothing of the setup. The setup's writes are
flushed (``os.sync``) before the sweep: the files retention deletes were
written days earlier.

``--stage files`` sweeps at 8 days instead: the files go, the jobs stay.
``--no-bytes`` keeps the file records but writes no files: what the sweep
itself costs, with the filesystem's unlinks taken out.

Usage: PYTHONPATH=src .venv/bin/python -P bench/retention.py [--jobs 10000 100000]
       [--stage jobs|files] [--batch 500] [--no-bytes]
"""

from __future__ import annotations

import sys
from pathlib import Path

# bench/queue.py shadows the stdlib module ``queue``: keep this folder off the path.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]

import argparse
import asyncio
import multiprocessing
import os
import resource
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from transcriber_adapters.filesystem import FilesystemFileStore
from transcriber_adapters.memory import (
    ManualClock,
    MemoryConverter,
    MemoryNotifier,
    MemoryRecognizer,
)
from transcriber_adapters.sqlite import SqliteJobRepository
from transcriber_adapters.sqlite.schema import connect, migrate
from transcriber_adapters.sqlite.statements import (
    INSERT_JOB_SQL,
    PUT_FILE_SQL,
    ROWS,
)
from transcriber_adapters.system import RandomIds
from transcriber_core.entities import FileRecord, Job, Location, Origin, State
from transcriber_core.policy import Settings
from transcriber_core.retention import sweep
from transcriber_core.services import Services

#: When the benchmark's jobs ended.
ENDED = datetime(2026, 11, 1, tzinfo=UTC)
#: Rows written per transaction while setting up.
SETUP_BATCH = 5000


def populate(data_dir: Path, count: int, *, with_bytes: bool = True) -> None:
    """``count`` done jobs, each with two file records and (``with_bytes``) two files on disk."""
    files_dir = data_dir / "files"
    files_dir.mkdir(parents=True)
    conn = connect(data_dir / "transcriber.db")
    migrate(conn, now=ENDED)
    for start in range(0, count, SETUP_BATCH):
        jobs, files = [], []
        for n in range(start, min(start + SETUP_BATCH, count)):
            source = FileRecord(
                id=f"s{n:08d}", location=Location.LOCAL, size=5, extension=".mp3", created=ENDED
            )
            converted = FileRecord(
                id=f"c{n:08d}", location=Location.LOCAL, size=5, extension=".ogg", created=ENDED
            )
            for record in (source, converted):
                if with_bytes:
                    (files_dir / record.name).write_bytes(b"bytes")
                files.append(ROWS.file_params(record))
            job = Job(
                id=f"j{n:08d}",
                state=State.DONE,
                origin=Origin.http(),
                source_file_id=source.id,
                converted_file_id=converted.id,
                text="a transcript of a few words",
                ended=ENDED + timedelta(microseconds=n),
                created=ENDED,
                updated=ENDED,
            )
            jobs.append(ROWS.job_params(job))
        conn.execute("BEGIN IMMEDIATE")
        conn.executemany(INSERT_JOB_SQL, jobs)
        conn.executemany(PUT_FILE_SQL, files)
        conn.execute("COMMIT")
    conn.close()
    # Retention deletes files written days ago, long on disk: flush the setup's writes
    # first, or the sweep measures the kernel's writeback of 200,000 new inodes.
    os.sync()


def run_sweep(data_dir: Path, age: timedelta, batch: int, answer: multiprocessing.Queue) -> None:  # type: ignore[type-arg]
    """In a fresh process: one sweep at ``ENDED + age``; seconds, counts and peak RSS."""

    async def main() -> tuple[float, int, int, int]:
        clock = ManualClock(ENDED + age)
        repo = await SqliteJobRepository.open(data_dir / "transcriber.db", clock=clock)
        services = Services(
            repo=repo,
            files=FilesystemFileStore(data_dir / "files", staging_dir=data_dir / "tmp"),
            converter=MemoryConverter(),
            recognizer=MemoryRecognizer(),
            notifier=MemoryNotifier(),
            clock=clock,
            ids=RandomIds(),
            settings=Settings(sweep_batch=batch),
        )
        started = time.perf_counter()
        swept = await sweep(services)
        seconds = time.perf_counter() - started
        await repo.close()
        assert swept is not None
        return seconds, swept.jobs + swept.recordings, swept.files, swept.failed

    seconds, jobs, files, failed = asyncio.run(main())
    peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    answer.put((seconds, jobs, files, failed, peak_kib))


def measure(count: int, stage: str, batch: int, *, with_bytes: bool) -> None:
    """Populate, sweep in a child, print one line."""
    age = timedelta(days=31) if stage == "jobs" else timedelta(days=8)
    with tempfile.TemporaryDirectory(prefix="retention-bench-") as folder:
        data_dir = Path(folder)
        populate(data_dir, count, with_bytes=with_bytes)
        context = multiprocessing.get_context("spawn")
        answer = context.Queue()
        child = context.Process(target=run_sweep, args=(data_dir, age, batch, answer))
        child.start()
        seconds, jobs, files, failed, peak_kib = answer.get()
        child.join()
        left = sum(1 for _ in (data_dir / "files").iterdir())
    print(
        f"stage={stage} bytes={'yes' if with_bytes else 'no '} jobs={count:>7}"
        f" swept_jobs={jobs} files={files} failed={failed}"
        f" files_left={left} seconds={seconds:.2f} jobs_per_s={jobs / seconds:,.0f}"
        f" peak_rss_mib={peak_kib / 1024:.1f}"
    )


def main() -> None:
    """Parse the arguments and measure each size."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--stage", choices=("jobs", "files"), default="jobs")
    parser.add_argument("--batch", type=int, default=Settings().sweep_batch)
    parser.add_argument(
        "--no-bytes",
        action="store_true",
        help="file records without files on disk: the sweep's own cost, not the filesystem's",
    )
    arguments = parser.parse_args()
    for count in arguments.jobs:
        measure(count, arguments.stage, arguments.batch, with_bytes=not arguments.no_bytes)


if __name__ == "__main__":
    main()
