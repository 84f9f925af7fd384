"""The worker pool: wake-ups, the one poller, and draining on shutdown (queue rule 10)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from datetime import timedelta
from pathlib import Path

import attrs

from tests.support.delegate import Delegate
from tests.support.world import World, make_world
from transcriber_adapters.memory import ManualClock, MemoryJobRepository, MemoryWakeupFeed
from transcriber_core.entities import DeliveryKind, Job, NewDelivery, Origin, State
from transcriber_core.errors import RepositoryUnavailable, TransientError
from transcriber_core.policy import DecodeLimits, Settings
from transcriber_core.ports import Event, RecognizerLimits, Standing
from transcriber_core.wakeup import Wakeup
from transcriber_core.worker import WEBHOOK_LOOPS_PER_DELIVERY_LOOP, Workers, acquire_next, process

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
    """Idle cost: one query per tick for the whole process, steps and outbox; no idle acquires."""
    world = make_world(tmp_path, settings=Settings(idle_poll_interval=timedelta(seconds=0.05)))
    workers = Workers(world.services, dict.fromkeys((State.CONVERT, State.RECOGNIZE), 4))
    workers.start()
    await asyncio.sleep(0.3)
    await workers.drain(grace=1)
    calls = world.repo.calls  # type: ignore[attr-defined]
    polls = calls.count("ready_states")
    assert 2 <= polls <= 8
    # Each loop asks once at start and then sleeps until woken; the poller asks nothing
    # but ready_states (the sweeper's one offer at start aside).
    assert calls.count("acquire") == 8
    # The three general recognize loops (not the express one) also look for a part (ADR 52).
    assert calls.count("acquire_part") == 3
    # One notice loop and its webhook loops (ADR 44), each asking once at start.
    assert calls.count("acquire_delivery") == 1 + WEBHOOK_LOOPS_PER_DELIVERY_LOOP
    sweep = {"take_sweep", "remove_ended_files", "remove_ended_jobs"}
    assert set(calls) - sweep == {"ready_states", "acquire", "acquire_part", "acquire_delivery"}


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
        async def save_if_held(
            self,
            job: Job,
            *,
            acquisition_id: str,
            delay: timedelta | None = None,
            deliveries: Sequence[NewDelivery] = (),
        ) -> None:
            if not failed_once.is_set():
                failed_once.set()
                raise RepositoryUnavailable
            await self.inner.save_if_held(
                job, acquisition_id=acquisition_id, delay=delay, deliveries=deliveries
            )

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

    async def notify(
        self, job: Job, event: Event, *, standing: Standing | None = None
    ) -> int | None:
        if event is Event.DONE:
            self.entered.set()
            await self.release.wait()
        self.delivered.append((job.id, event))
        return None


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


class IdleSpy(Delegate):
    """A repository that says when a loop asked for work and found none: it waits now."""

    def __init__(self, inner: object) -> None:
        super().__init__(inner)
        self.idle = asyncio.Event()

    async def acquire(self, *args: object, **kwargs: object) -> object:
        job = await self.inner.acquire(*args, **kwargs)
        if job is None:
            self.idle.set()
        return job


async def until_idle(spy: IdleSpy) -> None:
    """Wait (bounded) until the loop found no work."""
    async with asyncio.timeout(10):
        await spy.idle.wait()


def orphan_job(world: World, job_id: str) -> Job:
    """A convert job whose recording is missing: its step fails it at once, telling the sender."""
    now = world.clock.now()
    return Job(
        id=job_id,
        state=State.CONVERT,
        origin=Origin.telegram(chat_id=5, message_id=50),
        source_file_id="missing",
        created=now,
        updated=now,
    )


async def test_a_wakeup_feed_carries_work_from_another_process(tmp_path: Path) -> None:
    """A wake-up published elsewhere reaches this process's idle loop at once, with no polling."""
    feed = MemoryWakeupFeed()
    world = make_world(tmp_path, settings=NO_POLLING)
    spy = IdleSpy(world.repo)
    world.services = attrs.evolve(world.services, wakeup_feed=feed, repo=spy)
    # The other "process": its own repository object and wake-ups on the same database.
    other = MemoryJobRepository(database=world.repo.database)  # type: ignore[attr-defined]
    other_wakeup = Wakeup()
    workers = Workers(world.services, {State.CONVERT: 1})
    workers.start()
    try:
        await until_idle(spy)
        assert feed.listeners == 1
        job = orphan_job(world, "made-by-the-api-process")
        await other.create(job)
        other_wakeup.notify(State.CONVERT)  # reaches nobody here, as across processes
        feed.publish(State.CONVERT)
        failed = await told(world, job.id, Event.FAILED)
        assert failed.state is State.FAILED
    finally:
        await workers.drain(grace=1)
    assert feed.listeners == 0


async def test_without_a_feed_work_from_elsewhere_waits_for_the_poll(tmp_path: Path) -> None:
    """The control: the same job from another process, no feed, no polling, is not taken."""
    world = make_world(tmp_path, settings=NO_POLLING)
    spy = IdleSpy(world.repo)
    world.services = attrs.evolve(world.services, repo=spy)
    workers = Workers(world.services, {State.CONVERT: 1})
    workers.start()
    try:
        await until_idle(spy)
        job = orphan_job(world, "made-elsewhere")
        await world.repo.create(job)
        for _ in range(50):
            await asyncio.sleep(0)
        assert (await world.repo.get(job.id)).state is State.CONVERT
    finally:
        await workers.drain(grace=1)


async def test_a_worker_clock_five_minutes_fast_takes_no_live_lease(tmp_path: Path) -> None:
    """Leases are judged on the store's clock: a fast worker sees another's lease as live."""
    world = make_world(tmp_path)
    job = await world.submit()
    assert await acquire_next(world.services, State.CONVERT) is not None
    fast = ManualClock(world.clock.now() + timedelta(minutes=5))
    skewed = attrs.evolve(world.services, clock=fast)
    assert await acquire_next(skewed, State.CONVERT) is None
    assert (await world.repo.get(job.id)).attempts == 1


async def test_a_worker_clock_five_minutes_fast_delays_no_retry_by_its_skew(
    tmp_path: Path,
) -> None:
    """A retry pause starts at the store's now, not at the fast worker's."""
    world = make_world(tmp_path)
    world.converter.fail_next(TransientError("the converter crashed"))
    job = await world.submit()
    fast = ManualClock(world.clock.now() + timedelta(minutes=5))
    skewed = attrs.evolve(world.services, clock=fast)
    lease = await acquire_next(skewed, State.CONVERT)
    assert lease is not None
    await process(skewed, lease)
    stored = await world.repo.get(job.id)
    pause = world.services.settings.retry_base
    assert stored.delay_time == world.clock.now() + pause


class PartGate(Delegate):
    """The real recognizer, but a start on audio longer than 10 s waits for ``release``."""

    def __init__(self, inner: object) -> None:
        super().__init__(inner)
        self.entered = asyncio.Event()
        self.release = asyncio.Event()

    async def start(self, audio: object, *, duration: float | None, **options: object) -> object:
        if duration is not None and duration > 10:
            self.entered.set()
            await self.release.wait()
        return await self.inner.start(audio, duration=duration, **options)


async def test_a_voice_note_never_waits_behind_a_part(tmp_path: Path) -> None:
    """The general recognize loop holds a part; the express loop ends a voice note meanwhile."""
    world = make_world(tmp_path, settings=NO_POLLING)
    world.converter.duration = 150.0
    world.converter.limits = DecodeLimits(min_bytes_per_second=0.01)
    world.recognizer.limits = RecognizerLimits(max_seconds=60)
    long = await world.submit()
    await world.step(State.CONVERT)
    planned = await world.step(State.RECOGNIZE)
    assert planned is not None
    assert planned.state is State.CHECK
    gate = PartGate(world.services.recognizer)
    world.services = attrs.evolve(world.services, recognizer=gate)
    world.converter.duration = 5.0
    workers = Workers(world.services, {State.CONVERT: 2, State.RECOGNIZE: 2, State.CHECK: 1})
    workers.start()
    try:
        async with asyncio.timeout(10):
            await gate.entered.wait()
        note = await world.submit()
        assert (await told(world, note.id, Event.DONE)).state is State.DONE
        assert (await world.repo.get(long.id)).state is State.CHECK
        assert not any(part.done for part in await world.repo.get_parts(long.id))
        gate.release.set()
        assert (await told(world, long.id, Event.DONE)).state is State.DONE
    finally:
        await workers.drain(grace=1)
