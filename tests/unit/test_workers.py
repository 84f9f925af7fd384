"""The worker pool: wake-ups, the one poller, and draining on shutdown (queue rule 10)."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from pathlib import Path

import attrs

from tests.support.delegate import Delegate
from tests.support.world import World, make_world
from transcriber_core.entities import DeliveryKind, Job, Origin, State
from transcriber_core.errors import RepositoryUnavailable
from transcriber_core.policy import Settings
from transcriber_core.ports import Event
from transcriber_core.worker import Workers

#: With an hour between polls, only in-process wake-ups can move a job.
NO_POLLING = Settings(idle_poll_interval=timedelta(hours=1))
FAST_POLLING = Settings(idle_poll_interval=timedelta(milliseconds=10))


async def told(world: World, job_id: str, event: Event) -> Job:
    """Wait (bounded) until the sender was told ``event``; return the job as stored then."""
    async with asyncio.timeout(10):
        await world.notifier.wait_for(job_id, event)
    return await world.repo.get(job_id)


async def test_wakeups_carry_a_job_to_done_without_polling(tmp_path: Path) -> None:
    """Intake and each saved step wake the next step's idle worker at once."""
    world = make_world(tmp_path, settings=NO_POLLING)
    workers = Workers(world.services)
    workers.start()
    try:
        job = await world.submit()
        done = await told(world, job.id, Event.DONE)
        assert done.state is State.DONE
        assert done.text
    finally:
        await workers.drain(grace=1)


async def test_poller_finds_work_enqueued_elsewhere(tmp_path: Path) -> None:
    """A job written by another process (no wake-up here) is found by the poller."""
    world = make_world(tmp_path, settings=FAST_POLLING)
    workers = Workers(world.services)
    workers.start()
    try:
        now = world.clock.now()
        job = Job(
            id="from-another-process",
            state=State.CONVERT,
            origin=Origin.telegram(chat_id=5, message_id=50),
            source_file_id="missing",
            created=now,
            updated=now,
        )
        await world.repo.create(job)
        failed = await told(world, job.id, Event.FAILED)
        assert failed.state is State.FAILED
        assert failed.error == "the source file of the job no longer exists"
    finally:
        await workers.drain(grace=1)


async def test_idle_process_polls_once_per_interval_not_per_worker(tmp_path: Path) -> None:
    """Idle cost: one ready_states query per tick for the whole process, no idle acquires."""
    world = make_world(tmp_path, settings=Settings(idle_poll_interval=timedelta(seconds=0.05)))
    workers = Workers(world.services, dict.fromkeys((State.CONVERT, State.RECOGNIZE), 4))
    workers.start()
    await asyncio.sleep(0.3)
    await workers.drain(grace=1)
    calls = world.repo.calls  # type: ignore[attr-defined]
    polls = calls.count("ready_states")
    assert 2 <= polls <= 8
    # Each loop asks once at start and then sleeps until woken.
    assert calls.count("acquire") == 8


async def test_drain_lets_a_running_step_finish(tmp_path: Path) -> None:
    """On shutdown a step that ends within the grace period saves its result."""
    world = make_world(tmp_path, settings=NO_POLLING)
    gate = world.gate_converter()
    workers = Workers(world.services, {State.CONVERT: 1})
    workers.start()
    job = await world.submit()
    await gate.entered.wait()
    draining = asyncio.create_task(workers.drain(grace=5))
    gate.release.set()
    await draining
    assert (await world.repo.get(job.id)).state is State.RECOGNIZE


async def test_drain_cancels_a_step_past_the_grace(tmp_path: Path) -> None:
    """A step still running after the grace period is cancelled and leaves the job leased."""
    world = make_world(tmp_path, settings=NO_POLLING)
    gate = world.gate_converter()
    workers = Workers(world.services, {State.CONVERT: 1})
    workers.start()
    job = await world.submit()
    await gate.entered.wait()
    await workers.drain(grace=0.05)
    assert gate.cancelled.is_set()
    stored = await world.repo.get(job.id)
    assert stored.state is State.CONVERT
    assert stored.acquisition_id is not None
    world.later(world.services.settings.lease)
    gate.release.set()
    retried = await world.step(State.CONVERT)
    assert retried is not None
    assert retried.state is State.RECOGNIZE


async def test_stopped_workers_take_no_new_work(tmp_path: Path) -> None:
    """After stop_intake a new job stays queued."""
    world = make_world(tmp_path, settings=NO_POLLING)
    workers = Workers(world.services)
    workers.start()
    workers.stop_intake()
    job = await world.submit()
    await workers.drain(grace=1)
    assert (await world.repo.get(job.id)).state is State.CONVERT


async def test_acquire_errors_do_not_end_the_loop(tmp_path: Path) -> None:
    """A repository that fails once is asked again; the job still gets done."""
    world = make_world(tmp_path, settings=FAST_POLLING)

    class Flaky(Delegate):
        def __init__(self, inner: object) -> None:
            super().__init__(inner)
            self.failures = 1

        async def acquire(self, *args: object, **kwargs: object) -> object:
            if self.failures:
                self.failures -= 1
                raise OSError("database is locked")
            return await self.inner.acquire(*args, **kwargs)

    world.services = attrs.evolve(world.services, repo=Flaky(world.repo))
    job = await world.submit()
    workers = Workers(world.services)
    workers.start()
    try:
        assert (await told(world, job.id, Event.DONE)).state is State.DONE
    finally:
        await workers.drain(grace=1)


async def test_a_failed_save_does_not_end_the_worker(tmp_path: Path) -> None:
    """A database error while saving a result leaves the loop alive; the job is done later."""
    world = make_world(tmp_path, settings=FAST_POLLING)
    failed_once = asyncio.Event()

    class SaveFailsOnce(Delegate):
        async def save_if_held(self, job: Job, *, acquisition_id: str) -> None:
            if not failed_once.is_set():
                failed_once.set()
                raise RepositoryUnavailable
            await self.inner.save_if_held(job, acquisition_id=acquisition_id)

    world.services = attrs.evolve(world.services, repo=SaveFailsOnce(world.repo))
    workers = Workers(world.services, {State.CONVERT: 1, State.RECOGNIZE: 1, State.CHECK: 1})
    workers.start()
    try:
        job = await world.submit()
        async with asyncio.timeout(10):
            await failed_once.wait()
        world.later(world.services.settings.lease)  # the unsaved attempt's lease runs out
        assert (await told(world, job.id, Event.DONE)).state is State.DONE
    finally:
        await workers.drain(grace=1)


class HeldNotifier:
    """Holds every "done" notice until released; records what got through."""

    def __init__(self) -> None:
        self.entered = asyncio.Event()
        self.release = asyncio.Event()
        self.delivered: list[tuple[str, Event]] = []

    async def notify(self, job: Job, event: Event) -> None:
        if event is Event.DONE:
            self.entered.set()
            await self.release.wait()
        self.delivered.append((job.id, event))


async def test_a_notice_cut_off_by_shutdown_is_sent_after_the_restart(tmp_path: Path) -> None:
    """A delivery cancelled by shutdown stays in the outbox and goes out once its lease passed."""
    world = make_world(tmp_path, settings=NO_POLLING)
    held = HeldNotifier()
    told = world.notifier
    world.services = attrs.evolve(world.services, notifier=held)
    workers = Workers(world.services)
    workers.start()
    job = await world.submit()
    async with asyncio.timeout(10):
        await held.entered.wait()
    await workers.drain(grace=0.01)
    assert (job.id, Event.DONE) not in held.delivered
    assert (await world.repo.get(job.id)).state is State.DONE
    assert await world.repo.pending_deliveries() == {DeliveryKind.NOTICE: 1}
    # The next process: the cut delivery is handed out again after the lease.
    world.services = attrs.evolve(world.services, notifier=told)
    assert await world.deliver() == 0
    world.later(world.services.settings.lease)
    assert await world.deliver() == 1
    assert told.events_for(job.id)[-1] is Event.DONE
