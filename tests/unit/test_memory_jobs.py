"""What only the memory job repository offers: call record, reset, shared database, threads."""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta

import attrs
import pytest

from transcriber_adapters.memory import MemoryDatabase
from transcriber_adapters.memory.jobs import MemoryJobRepository
from transcriber_contracts.job_repository import check_one_winner
from transcriber_core.clocks import ManualClock
from transcriber_core.entities import Job, Origin, State

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
NOW = T0 + timedelta(minutes=10)
LEASE = timedelta(minutes=2)


def make_job(job_id: str, created: datetime = T0) -> Job:
    """A convert job from HTTP."""
    return Job(
        id=job_id, state=State.CONVERT, origin=Origin.http(), created=created, updated=created
    )


class NonAtomicRepository(MemoryJobRepository):
    """A broken acquire: it reads the oldest eligible job, yields, then writes the lease."""

    async def acquire(
        self,
        state: State,
        *,
        acquisition_id: str,
        lease: timedelta,
        short_only: bool = False,
    ) -> Job | None:
        """Read, then write in a second step: another acquirer gets in between."""
        now = self.database.clock.now()
        waiting = [
            job
            for job in await self.list_jobs(state=state)
            if job.acquisition_id is None
            or job.acquire_time is None
            or job.acquire_time <= now - lease
        ]
        if not waiting:
            return None
        oldest = waiting[-1]
        await asyncio.sleep(0)
        leased = attrs.evolve(
            oldest, acquisition_id=acquisition_id, acquire_time=now, attempts=oldest.attempts + 1
        )
        self.database.jobs[leased.id] = leased
        return leased


async def test_the_race_check_catches_a_non_atomic_acquire() -> None:
    """The contract's race check fails on an acquire that reads, then writes: it can fail."""
    clock = ManualClock(T0)
    first = NonAtomicRepository(clock)
    racers = [first, *(NonAtomicRepository(database=first.database) for _ in range(2))]
    with pytest.raises(AssertionError, match="3 acquirers got the one job"):
        await check_one_winner(clock, racers)


async def test_the_race_check_passes_the_real_acquire() -> None:
    """The same check over the real memory repositories on one database finds one winner."""
    clock = ManualClock(T0)
    first = MemoryJobRepository(clock)
    await check_one_winner(clock, [first, *(MemoryJobRepository(database=first.database),) * 2])


async def test_repositories_on_one_database_share_it() -> None:
    """A second repository on the same database object sees the first one's jobs."""
    database = MemoryDatabase(ManualClock(T0))
    first = MemoryJobRepository(database=database)
    second = MemoryJobRepository(database=database)
    await first.create(make_job("a"))
    assert (await second.get("a")).id == "a"


def test_a_shared_database_keeps_its_own_clock() -> None:
    """A repository on a shared database may not bring another clock: one database, one clock."""
    database = MemoryDatabase(ManualClock(T0))
    with pytest.raises(ValueError, match="clock"):
        MemoryJobRepository(ManualClock(NOW), database=database)


async def test_calls_are_recorded_in_order() -> None:
    """A test can see which methods the code under test called, and in what order."""
    repo = MemoryJobRepository(ManualClock(NOW))
    await repo.create(make_job("a"))
    await repo.acquire(State.CONVERT, acquisition_id="l", lease=LEASE)
    await repo.get("a")
    assert repo.calls == ["create", "acquire", "get"]


async def test_reset_forgets_everything() -> None:
    """After reset the repository is as new: no jobs, no files, no dedup keys, no calls."""
    repo = MemoryJobRepository(ManualClock(T0))
    job = Job(
        id="a", state=State.CONVERT, origin=Origin.http(), dedup_key="k", created=T0, updated=T0
    )
    await repo.create(job)
    repo.reset()
    assert repo.calls == []
    assert await repo.count_by_state() == {}
    assert await repo.create(job) == (job, True)


def test_threads_never_share_a_job() -> None:
    """Acquirers on 8 threads, each with its own loop and repository on one database, share none."""
    clock = ManualClock(T0)
    database = MemoryDatabase(clock)
    jobs = [make_job(f"job-{n:04d}") for n in range(2000)]

    async def fill() -> None:
        repo = MemoryJobRepository(database=database)
        for job in jobs:
            await repo.create(job)
            clock.advance(timedelta(microseconds=1))

    asyncio.run(fill())

    def drain(worker: int) -> list[str]:
        repo = MemoryJobRepository(database=database)

        async def run() -> list[str]:
            taken: list[str] = []
            while True:
                job = await repo.acquire(State.CONVERT, acquisition_id=f"w{worker}", lease=LEASE)
                if job is None:
                    return taken
                taken.append(job.id)

        return asyncio.run(run())

    with ThreadPoolExecutor(8) as pool:
        taken = [job_id for ids in pool.map(drain, range(8)) for job_id in ids]
    assert sorted(taken) == [job.id for job in jobs]
