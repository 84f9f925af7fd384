"""Waiting for a job's end (a /v1 answer, ADR 46): woken by the change itself, not a poll.

The queue's fallback poll is an hour in these tests, so an answer that
comes at all can only have been woken: by this process's worker, or by
another process's ``NOTIFY`` on PostgreSQL. ``HANG`` only tells a hang
from a slow box; no test measures how fast an answer came.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path

import attrs
import pytest

from tests.support.world import make_world
from transcriber_adapters.memory import ManualClock
from transcriber_adapters.postgres import Database, PostgresJobRepository, PostgresWakeupFeed
from transcriber_core.entities import Job, Origin, State
from transcriber_core.errors import JobNotFound
from transcriber_core.policy import Settings
from transcriber_core.transitions import transition
from transcriber_core.waiting import watch_job
from transcriber_core.wakeup import Wakeup

#: No poll comes to the rescue within a test.
HOUR_POLL = Settings(
    idle_poll_interval=timedelta(hours=1), reconnect_base=timedelta(milliseconds=1)
)
#: Seconds after which a waiter is taken to be hung: far inside the hour's poll, far past any
#: loaded box's delay.
HANG = 60


async def _states(watching: AsyncIterator[Job]) -> list[State]:
    return [job.state async for job in watching]


async def test_an_in_process_end_wakes_the_waiter_at_once(tmp_path: Path) -> None:
    """The worker that ends the job in this process wakes its waiter; no poll is waited for."""
    world = make_world(tmp_path, settings=HOUR_POLL)
    job = await world.submit(origin=Origin.http())
    watching = watch_job(world.services, job.id, within=3600)
    # Its first read is done (the wake-up token taken before it): the end is after it, always.
    assert (await anext(watching)).state is State.CONVERT
    await world.run_to_end(job.id)
    async with asyncio.timeout(HANG):
        states = await _states(watching)
    assert states[-1] is State.DONE


async def test_the_watch_ends_at_its_time_with_the_job_as_it_is(tmp_path: Path) -> None:
    """Past ``within`` seconds the watch ends; the last job it yields is the unfinished one."""
    world = make_world(tmp_path, settings=HOUR_POLL)
    job = await world.submit(origin=Origin.http())
    async with asyncio.timeout(HANG):
        states = await _states(watch_job(world.services, job.id, within=0.05))
    assert states == [State.CONVERT, State.CONVERT]


async def test_a_deleted_job_ends_the_watch_with_not_found(tmp_path: Path) -> None:
    """A job deleted while it is watched raises JobNotFound at the next look."""
    world = make_world(tmp_path, settings=HOUR_POLL)
    job = await world.submit(origin=Origin.http())
    watching = watch_job(world.services, job.id, within=3600)
    assert (await anext(watching)).state is State.CONVERT
    await world.repo.delete_job(job.id)
    world.services.wakeup.job_changed(job.id)
    with pytest.raises(JobNotFound):
        await anext(watching)


@pytest.fixture
async def second_pool(postgres_url: str) -> AsyncIterator[Database]:
    """Another pool on the same database: another process's connections."""
    database = await Database.open(postgres_url, pool_size=2)
    try:
        yield database
    finally:
        await database.close()


async def test_an_end_in_another_process_wakes_the_waiter_through_notify(
    tmp_path: Path, pg_database: Database, second_pool: Database, postgres_url: str
) -> None:
    """Process B ends the job on PostgreSQL; process A's waiter hears its NOTIFY, not a poll."""
    clock = ManualClock()
    here = make_world(tmp_path, settings=HOUR_POLL, repo=PostgresJobRepository(pg_database))
    there = PostgresJobRepository(second_pool)
    wakeup = Wakeup()
    here.services = attrs.evolve(here.services, wakeup=wakeup)
    feed = PostgresWakeupFeed(postgres_url, settings=HOUR_POLL)
    listening = asyncio.Event()

    def changed(job_id: str) -> None:
        if job_id == "":
            listening.set()
        wakeup.job_changed(job_id)

    listener = asyncio.create_task(feed.listen(wakeup.notify, job_changed=changed))
    try:
        async with asyncio.timeout(30):
            await listening.wait()
        job = await here.submit(origin=Origin.http())
        watching = watch_job(here.services, job.id, within=3600)
        # Waited for, not slept for: B ends the job only after A's first read.
        assert (await anext(watching)).state is State.CONVERT
        taken = await there.acquire(State.CONVERT, acquisition_id="b-1", lease=timedelta(minutes=2))
        assert taken is not None
        ended = transition(taken, State.FAILED, now=clock.now(), error="judged by process B")
        await there.save_if_held(ended, acquisition_id="b-1")
        async with asyncio.timeout(HANG):
            states = await _states(watching)
    finally:
        listener.cancel()
        await asyncio.gather(listener, return_exceptions=True)
    assert states[-1] is State.FAILED
