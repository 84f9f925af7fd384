"""What only the in-memory job repository offers: its call record, reset, and thread safety."""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta

from transcriber_adapters.memory.jobs import MemoryJobRepository
from transcriber_core.entities import Job, Origin, State

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
NOW = T0 + timedelta(minutes=10)


def make_job(job_id: str, created: datetime = T0) -> Job:
    """A convert job from HTTP."""
    return Job(
        id=job_id, state=State.CONVERT, origin=Origin.http(), created=created, updated=created
    )


async def test_calls_are_recorded_in_order() -> None:
    """A test can see which methods the code under test called, and in what order."""
    repo = MemoryJobRepository()
    await repo.create(make_job("a"))
    await repo.acquire(State.CONVERT, acquisition_id="l", now=NOW, lease_cutoff=T0)
    await repo.get("a")
    assert repo.calls == ["create", "acquire", "get"]


async def test_reset_forgets_everything() -> None:
    """After reset the repository is as new: no jobs, no files, no dedup keys, no calls."""
    repo = MemoryJobRepository()
    job = Job(
        id="a", state=State.CONVERT, origin=Origin.http(), dedup_key="k", created=T0, updated=T0
    )
    await repo.create(job)
    repo.reset()
    assert repo.calls == []
    assert await repo.count_by_state() == {}
    assert await repo.create(job) == (job, True)


def test_threads_never_share_a_job() -> None:
    """Acquirers on several threads, each with its own event loop, get every job exactly once."""
    repo = MemoryJobRepository()
    jobs = [make_job(f"job-{n:04d}", T0 + timedelta(microseconds=n)) for n in range(2000)]

    async def fill() -> None:
        for job in jobs:
            await repo.create(job)

    asyncio.run(fill())

    def drain(worker: int) -> list[str]:
        async def run() -> list[str]:
            taken: list[str] = []
            while True:
                job = await repo.acquire(
                    State.CONVERT, acquisition_id=f"w{worker}", now=NOW, lease_cutoff=T0
                )
                if job is None:
                    return taken
                taken.append(job.id)

        return asyncio.run(run())

    with ThreadPoolExecutor(8) as pool:
        taken = [job_id for ids in pool.map(drain, range(8)) for job_id in ids]
    assert sorted(taken) == [job.id for job in jobs]
