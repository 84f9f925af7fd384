"""Queue throughput, pickup latency and idle cost of the SQLite job repository.

Prints its figures; the numbers in docs/benchmarks.md come from here.

1. Throughput: N jobs acquired and completed (acquire, then a fenced save of
   the next state) by 3 concurrent workers through the async repository, vs.
   the same statements and row mapping on one bare sqlite3 connection.
2. Pickup latency: enqueue to step start for an idle worker in the same process.
3. Idle cost: repository queries per second of an idle process running 6 loops.

Usage: .venv/bin/python bench/queue.py [--jobs 20000] [--workers 3] [--pickups 200]
"""

from __future__ import annotations

import sys
from pathlib import Path

# This script shares its name with the stdlib module ``queue``, which sqlite3's
# thread and asyncio import: keep the script's own folder off the import path.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]

import argparse
import asyncio
import statistics
import tempfile
import time
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import attrs

from transcriber_adapters.memory import (
    MemoryConverter,
    MemoryFileStore,
    MemoryNotifier,
    MemoryRecognizer,
)
from transcriber_adapters.sqlite import SqliteJobRepository
from transcriber_adapters.sqlite.schema import connect
from transcriber_adapters.sqlite.statements import (
    ACQUIRE_SQL,
    INSERT_JOB_SQL,
    SAVE_IF_HELD_SQL,
    job_from_row,
    job_params,
)
from transcriber_adapters.sqlite.times import to_db
from transcriber_adapters.system import RandomIds, SystemClock
from transcriber_core.entities import STEP_STATES, Job, Origin, State
from transcriber_core.intake import submit
from transcriber_core.policy import DEFAULT_SETTINGS, Settings
from transcriber_core.ports import Event, ProgressCallback
from transcriber_core.services import Services
from transcriber_core.transitions import transition
from transcriber_core.worker import Workers

CLOCK = SystemClock()
IDS = RandomIds()


def new_jobs(count: int) -> list[Job]:
    """Jobs in ``convert``, created in order a microsecond apart."""
    start = CLOCK.now() - timedelta(hours=1)
    return [
        Job(
            id=IDS.new_id(),
            state=State.CONVERT,
            origin=Origin.http(),
            created=start + timedelta(microseconds=i),
            updated=start + timedelta(microseconds=i),
        )
        for i in range(count)
    ]


async def async_throughput(path: Path, jobs: list[Job], workers: int) -> float:
    """Jobs per second through ``SqliteJobRepository`` with ``workers`` coroutines."""
    repo = await SqliteJobRepository.open(path)
    for job in jobs:
        await repo.create(job)

    async def worker() -> int:
        done = 0
        while True:
            acquisition_id = IDS.new_id()
            job = await repo.acquire(
                State.CONVERT, acquisition_id=acquisition_id, lease=DEFAULT_SETTINGS.lease
            )
            if job is None:
                return done
            finished = transition(job, State.RECOGNIZE, now=CLOCK.now())
            await repo.save_if_held(finished, acquisition_id=acquisition_id)
            done += 1

    started = time.perf_counter()
    counts = await asyncio.gather(*(worker() for _ in range(workers)))
    elapsed = time.perf_counter() - started
    await repo.close()
    assert sum(counts) == len(jobs), counts
    return len(jobs) / elapsed


def raw_throughput(path: Path, jobs: list[Job]) -> float:
    """Jobs per second running the same statements on one bare sqlite3 connection."""
    asyncio.run(_create_schema(path))
    conn = connect(path)
    conn.execute("BEGIN")
    conn.executemany(INSERT_JOB_SQL, [job_params(job) for job in jobs])
    conn.execute("COMMIT")
    done = 0
    started = time.perf_counter()
    while True:
        acquisition_id = IDS.new_id()
        now = CLOCK.now()
        row = conn.execute(
            ACQUIRE_SQL,
            {
                "state": State.CONVERT.value,
                "acquisition_id": acquisition_id,
                "now": to_db(now),
                "lease_cutoff": to_db(now - DEFAULT_SETTINGS.lease),
            },
        ).fetchone()
        if row is None:
            break
        finished = transition(job_from_row(row), State.RECOGNIZE, now=CLOCK.now())
        cursor = conn.execute(SAVE_IF_HELD_SQL, {**job_params(finished), "held_by": acquisition_id})
        assert cursor.rowcount == 1
        done += 1
    elapsed = time.perf_counter() - started
    conn.close()
    assert done == len(jobs)
    return done / elapsed


async def _create_schema(path: Path) -> None:
    repo = await SqliteJobRepository.open(path)
    await repo.close()


@attrs.define
class StampingConverter:
    """Notes when a step starts, then converts like the memory converter."""

    inner: MemoryConverter
    entered: Callable[[], None]

    @property
    def output_extension(self) -> str:
        return self.inner.output_extension

    async def convert(
        self, source: Path, target: Path, *, on_progress: ProgressCallback | None = None
    ) -> float:
        self.entered()
        return await self.inner.convert(source, target, on_progress=on_progress)


class CountingRepository:
    """Counts every call made to the wrapped repository."""

    def __init__(self, inner: SqliteJobRepository) -> None:
        self.inner = inner
        self.calls = 0

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self.inner, name)
        if not callable(attribute):
            return attribute

        def counted(*args: Any, **kwargs: Any) -> Any:
            self.calls += 1
            return attribute(*args, **kwargs)

        return counted


async def pickup_latency(folder: Path, rounds: int) -> list[float]:
    """Milliseconds from ``submit`` to the convert step starting, idle worker, same process."""
    repo = await SqliteJobRepository.open(folder / "pickup.db")
    entered_at: list[float] = []
    converter = StampingConverter(MemoryConverter(), lambda: entered_at.append(time.perf_counter()))
    notifier = MemoryNotifier()
    services = Services(
        repo=repo,
        files=MemoryFileStore(),
        converter=converter,
        recognizer=MemoryRecognizer(),
        notifier=notifier,
        clock=CLOCK,
        ids=IDS,
        # Only wake-ups may move a job: the fallback poll is an hour away.
        settings=Settings(idle_poll_interval=timedelta(hours=1)),
    )
    workers = Workers(services)
    workers.start()
    latencies = []
    for i in range(rounds):
        upload = folder / f"upload-{i}"
        upload.write_bytes(b"recording bytes " * 64)
        before = len(entered_at)
        started = time.perf_counter()
        job, _ = await submit(services, upload, extension=".ogg", origin=Origin.telegram(1, i))
        await notifier.wait_for(job.id, Event.DONE)
        assert len(entered_at) == before + 1
        latencies.append((entered_at[before] - started) * 1000)
    await workers.drain(grace=5)
    await repo.close()
    return latencies


async def idle_queries_per_second(folder: Path, seconds: float) -> float:
    """Repository calls per second of an idle process with 2 loops per step state."""
    repo = CountingRepository(await SqliteJobRepository.open(folder / "idle.db"))
    services = Services(
        repo=repo,  # type: ignore[arg-type]
        files=MemoryFileStore(),
        converter=MemoryConverter(),
        recognizer=MemoryRecognizer(),
        notifier=MemoryNotifier(),
        clock=CLOCK,
        ids=IDS,
        settings=DEFAULT_SETTINGS,
    )
    workers = Workers(services, dict.fromkeys(STEP_STATES, 2))
    workers.start()
    await asyncio.sleep(1)  # let each loop make its first acquire
    repo.calls = 0
    await asyncio.sleep(seconds)
    calls = repo.calls
    await workers.drain(grace=1)
    await repo.inner.close()
    return calls / seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=20_000)
    parser.add_argument("--workers", type=int, default=3)
    parser.add_argument("--pickups", type=int, default=200)
    parser.add_argument("--idle-seconds", type=float, default=5.0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-queue-") as tmp:
        folder = Path(tmp)
        jobs = new_jobs(args.jobs)
        raw = raw_throughput(folder / "raw.db", jobs)
        ours = asyncio.run(async_throughput(folder / "async.db", jobs, args.workers))
        print(f"throughput: {args.jobs} jobs, {args.workers} async workers")
        print(f"  async repository: {ours:8.0f} jobs/s")
        print(f"  raw sqlite3:      {raw:8.0f} jobs/s (same statements, one connection)")
        print(f"  ratio:            {ours / raw:8.2f}")
        latencies = asyncio.run(pickup_latency(folder, args.pickups))
        quantiles = statistics.quantiles(latencies, n=100)
        print(f"pickup latency over {args.pickups} idle pickups (enqueue -> step start):")
        print(
            f"  p50 {quantiles[49]:.2f} ms, p95 {quantiles[94]:.2f} ms, max {max(latencies):.2f} ms"
        )
        idle = asyncio.run(idle_queries_per_second(folder, args.idle_seconds))
        print(f"idle cost: {idle:.2f} repository queries/s (6 worker loops, one process)")


if __name__ == "__main__":
    main()
