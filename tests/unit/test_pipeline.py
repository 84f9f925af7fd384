"""The steps and the worker: the queue rules and acceptance 4-11 (docs/reference.md).

Every test runs twice: on the memory job repository and on SQLite on a real
file (the other ports stay in memory), so the queue rules hold on both.
"""

from __future__ import annotations

import asyncio
import tempfile
from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path

import attrs
import pytest

from tests.support.delegate import Delegate
from tests.support.world import World, make_world
from transcriber_adapters.memory import ManualClock, MemoryFileStore
from transcriber_core import edits, steps
from transcriber_core.copies import storage_copy_id
from transcriber_core.entities import DeliveryKind, Job, Location, Origin, State
from transcriber_core.errors import (
    JobChanged,
    LeaseLost,
    NotifierUnavailable,
    RecognizerUnavailable,
    StorageUnavailable,
    TranscriberError,
    TransientError,
    UnreadableMedia,
)
from transcriber_core.naming import derived_file_id
from transcriber_core.policy import DEFAULT_SETTINGS, Settings
from transcriber_core.ports import Event, JobRepository
from transcriber_core.worker import acquire_next, process

#: Makes a world on the test's repository; takes ``make_world``'s keywords.
NewWorld = Callable[..., World]


@pytest.fixture
def new_world(tmp_path: Path, repo: JobRepository, clock: ManualClock) -> NewWorld:
    """A world maker for tests that need other settings or an Object Storage."""

    def make(**options: object) -> World:
        return make_world(tmp_path, repo=repo, clock=clock, **options)  # type: ignore[arg-type]

    return make


@pytest.fixture
def world(new_world: NewWorld) -> World:
    """A world with the test settings on the test's repository."""
    return new_world()


@pytest.fixture
def temp_dir(tmp_path: Path) -> Iterator[Path]:
    """Point the system temp dir at an empty folder for the test."""
    folder = tmp_path / "system-tmp"
    folder.mkdir()
    old = tempfile.tempdir
    tempfile.tempdir = str(folder)
    try:
        yield folder
    finally:
        tempfile.tempdir = old


async def test_recording_reaches_done(world: World) -> None:
    """A submitted recording goes convert → recognize → check → done with the demo text."""
    job = await world.submit()
    done = await world.run_to_end(job.id)
    assert done.state is State.DONE
    assert done.text is not None
    assert f"{done.duration:.1f} seconds" in done.text
    assert done.attempts == 0
    assert done.converted_file_id == derived_file_id(job.id, steps.CONVERTED)
    assert world.notifier.events_for(job.id) == [Event.ACCEPTED, Event.DONE]


async def test_each_step_moves_one_state(world: World) -> None:
    """Every step advances its job exactly one state and resets attempts."""
    job = await world.submit()
    seen = []
    for state in (State.CONVERT, State.RECOGNIZE, State.CHECK):
        result = await world.step(state)
        assert result is not None
        seen.append((result.state, result.attempts, result.acquisition_id))
    assert seen == [(State.RECOGNIZE, 0, None), (State.CHECK, 0, None), (State.DONE, 0, None)]
    assert (await world.repo.get(job.id)).state is State.DONE


async def test_no_work_is_none(world: World) -> None:
    """An empty queue answers None, not an error."""
    assert await acquire_next(world.services, State.CONVERT) is None


async def test_step_failing_every_time_ends_dead(world: World) -> None:
    """Acceptance 4: after max attempts the job is dead, not acquired, listed, and told."""
    job = await world.submit()
    for _ in range(world.services.settings.max_attempts):
        world.converter.fail_next(StorageUnavailable())
        result = await world.step(State.CONVERT)
        assert result is not None
        assert result.state is State.CONVERT
        assert result.delay_time is not None
        world.clock.set(result.delay_time)
    assert await world.step(State.CONVERT) is None
    dead = await world.repo.get(job.id)
    assert dead.state is State.DEAD
    assert dead.attempts == world.services.settings.max_attempts + 1
    assert "gave up after 5 attempts" in (dead.error or "")
    assert [j.id for j in await world.repo.list_jobs(state=State.DEAD)] == [job.id]
    assert world.notifier.events_for(job.id) == [Event.ACCEPTED, Event.DEAD]
    world.later(timedelta(days=1))
    assert await acquire_next(world.services, State.CONVERT) is None


async def test_second_retry_pause_longer_than_first(world: World) -> None:
    """Acceptance 5: the second failure waits longer than the first."""
    job = await world.submit()
    pauses = []
    for _ in range(2):
        world.converter.fail_next(StorageUnavailable())
        now = world.clock.now()
        result = await world.step(State.CONVERT)
        assert result is not None
        assert result.delay_time is not None
        pauses.append(result.delay_time - now)
        world.clock.set(result.delay_time)
    assert pauses == [timedelta(seconds=1), timedelta(seconds=2)]
    assert (await world.repo.get(job.id)).attempts == 2


async def test_retried_job_waits_for_its_pause(world: World) -> None:
    """A job in its retry pause is not handed out until the pause has passed."""
    await world.submit()
    world.converter.fail_next(StorageUnavailable())
    await world.step(State.CONVERT)
    assert await acquire_next(world.services, State.CONVERT) is None
    world.later(timedelta(seconds=1))
    assert await acquire_next(world.services, State.CONVERT) is not None


async def test_worker_dying_every_time_ends_dead(world: World) -> None:
    """Acceptance 7: a job whose worker dies on every acquire is dead after max acquires."""
    job = await world.submit()
    lease = world.services.settings.lease
    for attempt in range(1, world.services.settings.max_attempts + 1):
        taken = await acquire_next(world.services, State.CONVERT)
        assert taken is not None
        assert taken.job.attempts == attempt
        world.later(lease)  # the worker never comes back
    assert await acquire_next(world.services, State.CONVERT) is None
    assert (await world.repo.get(job.id)).state is State.DEAD
    await world.deliver()
    assert world.notifier.events_for(job.id)[-1] is Event.DEAD


async def test_exhausted_job_does_not_hide_the_next(world: World) -> None:
    """The acquirer that marks a job dead goes on to hand out the next live job."""
    first = await world.submit(b"first")
    world.later(timedelta(seconds=1))
    second = await world.submit(b"second")
    for attempt in range(world.services.settings.max_attempts):
        taken = await world.repo.acquire(
            State.CONVERT,
            acquisition_id=f"crash-{attempt}",
            lease=timedelta(0),
        )
        assert taken is not None
        assert taken.id == first.id
        world.later(world.services.settings.lease)
    lease = await acquire_next(world.services, State.CONVERT)
    assert lease is not None
    assert lease.job.id == second.id
    assert (await world.repo.get(first.id)).state is State.DEAD


async def test_unreadable_recording_fails_without_retry(world: World) -> None:
    """A recording the converter cannot decode is failed at once with a clear reason."""
    job = await world.submit()
    world.converter.fail_next(UnreadableMedia("the recording has no audio stream"))
    result = await world.step(State.CONVERT)
    assert result is not None
    assert result.state is State.FAILED
    assert result.error == "the recording has no audio stream"
    assert result.attempts == 1
    assert world.notifier.events_for(job.id) == [Event.ACCEPTED, Event.FAILED]
    world.later(timedelta(hours=1))
    assert await acquire_next(world.services, State.CONVERT) is None


async def test_unexpected_error_is_retried_in_our_own_words(world: World) -> None:
    """A library error with a path inside becomes a retry whose error names no path."""
    job = await world.submit()
    world.converter.fail_next(RuntimeError("/srv/data/secret-name.mp3: boom"))
    result = await world.step(State.CONVERT)
    assert result is not None
    assert result.state is State.CONVERT
    assert result.error == "unexpected error in the convert step"
    assert "secret" not in repr(await world.repo.get(job.id))


async def test_lost_lease_writes_nothing_and_tells_nobody(world: World) -> None:
    """Acceptance 8: a step whose lease passed to another worker saves no result."""
    gate = world.gate_converter()
    job = await world.submit()
    lease = await acquire_next(world.services, State.CONVERT)
    assert lease is not None
    running = asyncio.create_task(process(world.services, lease))
    await gate.entered.wait()
    world.later(world.services.settings.lease)
    usurper = await acquire_next(world.services, State.CONVERT)
    assert usurper is not None
    gate.release.set()
    assert await running is None
    stored = await world.repo.get(job.id)
    assert stored.state is State.CONVERT
    assert stored.acquisition_id == usurper.acquisition_id
    assert world.notifier.events_for(job.id) == [Event.ACCEPTED]


class RenewalSpy(Delegate):
    """A repository whose renewals are observed, or refused as lost once ``lose_after`` is set."""

    def __init__(self, inner: object, *, lose_after: asyncio.Event | None = None) -> None:
        super().__init__(inner)
        self.lose_after = lose_after
        self.renewed = asyncio.Event()

    async def renew(self, job_id: str, *, acquisition_id: str) -> None:
        self.renewed.set()
        if self.lose_after is not None and self.lose_after.is_set():
            raise LeaseLost
        await self.inner.renew(job_id, acquisition_id=acquisition_id)


FAST_RENEWAL = Settings(lease=timedelta(seconds=0.2), lease_renewal=timedelta(seconds=0.01))


async def test_running_step_renews_its_lease(new_world: NewWorld) -> None:
    """While a step runs its worker moves acquire_time forward (the heartbeat)."""
    world = new_world(settings=FAST_RENEWAL)
    spy = RenewalSpy(world.repo)
    gate = world.gate_converter()
    world.services = attrs.evolve(world.services, repo=spy)
    job = await world.submit()
    lease = await acquire_next(world.services, State.CONVERT)
    assert lease is not None
    taken_at = (await world.repo.get(job.id)).acquire_time
    running = asyncio.create_task(process(world.services, lease))
    await gate.entered.wait()
    world.later(timedelta(seconds=1))
    spy.renewed.clear()
    await spy.renewed.wait()
    renewed_at = (await world.repo.get(job.id)).acquire_time
    assert taken_at is not None
    assert renewed_at is not None
    assert renewed_at > taken_at
    gate.release.set()
    result = await running
    assert result is not None
    assert result.state is State.RECOGNIZE


async def test_failed_renewal_cancels_the_step(new_world: NewWorld) -> None:
    """A renewal that finds the lease gone cancels the running step and saves nothing."""
    world = new_world(settings=FAST_RENEWAL)
    gate = world.gate_converter()
    # The lease is lost once the step is inside the converter: a renewal that came
    # earlier, on a loaded box, would cancel it before there is anything to cancel.
    lost = RenewalSpy(world.repo, lose_after=gate.entered)
    world.services = attrs.evolve(world.services, repo=lost)
    job = await world.submit()
    lease = await acquire_next(world.services, State.CONVERT)
    assert lease is not None
    assert await process(world.services, lease) is None
    assert gate.cancelled.is_set()
    stored = await world.repo.get(job.id)
    assert stored.state is State.CONVERT
    assert stored.acquisition_id == lease.acquisition_id


async def test_step_past_its_ceiling_is_retried(new_world: NewWorld) -> None:
    """A step that runs past its ceiling is cancelled and retried after the pause."""
    settings = Settings(convert_ceiling=timedelta(seconds=0.05))
    world = new_world(settings=settings)
    gate = world.gate_converter()
    job = await world.submit()
    result = await world.step(State.CONVERT)
    assert gate.cancelled.is_set()
    assert result is not None
    assert result.state is State.CONVERT
    assert "ceiling" in (result.error or "")
    assert (await world.repo.get(job.id)).delay_time is not None


async def test_hand_made_job_with_missing_file_fails_cleanly(world: World) -> None:
    """A job pointing at a file record that does not exist fails with a reason."""
    now = world.clock.now()
    job = Job(
        id="hand-made-job-000000001",
        state=State.CONVERT,
        origin=Origin.http(),
        source_file_id="no-such-file",
        created=now,
        updated=now,
    )
    await world.repo.create(job)
    result = await world.step(State.CONVERT)
    assert result is not None
    assert result.state is State.FAILED
    assert result.error == "the source file of the job no longer exists"


@pytest.mark.parametrize(
    ("state", "reason"),
    [
        (State.CONVERT, "the job has no source file"),
        (State.RECOGNIZE, "the job has no converted file"),
        (State.CHECK, "the job has no recognition operation to check"),
    ],
)
async def test_hand_made_job_without_references_fails(
    world: World, state: State, reason: str
) -> None:
    """A job edited into any step state without what that step needs fails, never crashes."""
    now = world.clock.now()
    job = Job(id=f"bare-{state.value}", state=state, origin=Origin.http(), created=now, updated=now)
    await world.repo.create(job)
    result = await world.step(state)
    assert result is not None
    assert result.state is State.FAILED
    assert result.error == reason


async def test_recording_bytes_gone_from_store_fails(world: World) -> None:
    """A file record whose bytes vanished from the store fails the job, not the worker."""
    job = await world.submit()
    source = await world.repo.get_file(job.source_file_id or "")
    await world.files.delete(source)
    result = await world.step(State.CONVERT)
    assert result is not None
    assert result.state is State.FAILED
    assert result.error == "the recording is missing from storage"


async def test_pending_check_waits_the_poll_delay_without_spending_attempts(world: World) -> None:
    """Queue rule 7: "not ready yet" sets the poll delay and leaves attempts at 0."""
    world.recognizer.checks_before_done = 2
    job = await world.submit()
    await world.step(State.CONVERT)
    await world.step(State.RECOGNIZE)
    now = world.clock.now()
    result = await world.step(State.CHECK)
    assert result is not None
    assert result.state is State.CHECK
    assert result.attempts == 0
    assert result.error is None
    assert result.delay_time == now + timedelta(seconds=5)
    assert await acquire_next(world.services, State.CHECK) is None
    done = await world.run_to_end(job.id)
    assert done.state is State.DONE
    assert done.attempts == 0


async def test_transient_check_error_spends_an_attempt(world: World) -> None:
    """Queue rule 7: an unreachable recognizer is a failed attempt with the retry pause."""
    await world.submit()
    await world.step(State.CONVERT)
    await world.step(State.RECOGNIZE)
    world.recognizer.fail_next_check(RecognizerUnavailable())
    now = world.clock.now()
    result = await world.step(State.CHECK)
    assert result is not None
    assert result.attempts == 1
    assert result.delay_time == now + timedelta(seconds=1)


async def test_rejected_recognition_fails_the_job(world: World) -> None:
    """A recognizer's rejection fails the job with its reason."""
    world.recognizer.reject_next("no speech recognised")
    job = await world.submit()
    done = await world.run_to_end(job.id)
    assert done.state is State.FAILED
    assert done.error == "no speech recognised"
    assert world.notifier.events_for(job.id)[-1] is Event.FAILED


async def test_crash_after_storing_converted_file_leaves_no_dangling_job(world: World) -> None:
    """Acceptance 10: output stored but job not saved; the retry reuses the same record."""
    job = await world.submit()
    lease = await acquire_next(world.services, State.CONVERT)
    assert lease is not None
    await steps.convert(lease.job, world.services)  # work done, then the worker dies
    stored = await world.repo.get(job.id)
    assert stored.converted_file_id is None
    await world.repo.get_file(stored.source_file_id or "")
    world.later(world.services.settings.lease)
    result = await world.step(State.CONVERT)
    assert result is not None
    assert result.state is State.RECOGNIZE
    converted = await world.repo.get_file(result.converted_file_id or "")
    assert await world.files.exists(converted)
    assert sorted(world.files.names()) == sorted(
        [(await world.repo.get_file(job.source_file_id or "")).name, converted.name]
    )


async def test_no_working_copy_left_after_step_failure(world: World, temp_dir: Path) -> None:
    """Acceptance 11: a failed step leaves nothing in the temp dir."""
    await world.submit()
    world.converter.fail_next(StorageUnavailable())
    await world.step(State.CONVERT)
    world.converter.fail_next(UnreadableMedia())
    world.later(timedelta(minutes=1))
    await world.step(State.CONVERT)
    assert list(temp_dir.iterdir()) == []


async def test_no_working_copy_left_after_cancellation(new_world: NewWorld, temp_dir: Path) -> None:
    """A step cancelled mid-work (ceiling) leaves no working copy or staging file behind."""
    world = new_world(settings=Settings(convert_ceiling=timedelta(seconds=0.05)))
    gate = world.gate_converter()
    await world.submit()
    await world.step(State.CONVERT)
    assert gate.cancelled.is_set()
    assert list(temp_dir.iterdir()) == []


async def test_duplicate_intake_makes_one_job(world: World) -> None:
    """Acceptance 16 at the core: the same dedup key yields the first job, one file."""
    first = await world.submit(b"one", dedup_key="key-1")
    second = await world.submit(b"one", dedup_key="key-1")
    assert second.id == first.id
    assert len(world.files.names()) == 1
    assert len(await world.repo.list_jobs()) == 1
    assert world.notifier.events_for(first.id) == [Event.ACCEPTED]


async def test_notifier_failure_does_not_undo_the_result(world: World) -> None:
    """A notifier that raises leaves the job done; the worker goes on."""
    job = await world.submit()
    await world.step(State.CONVERT)
    await world.step(State.RECOGNIZE)
    world.notifier.fail_next(ConnectionError("telegram down"))
    result = await world.step(State.CHECK)
    assert result is not None
    assert (await world.repo.get(job.id)).state is State.DONE


async def test_http_jobs_are_not_messaged(world: World) -> None:
    """A job from HTTP reaches done with nothing sent anywhere."""
    job = await world.submit(origin=Origin.http())
    await world.run_to_end(job.id)
    assert world.notifier.notices == []


async def test_storage_copy_made_for_recognizer_and_removed_at_end(new_world: NewWorld) -> None:
    """With Object Storage the recognizer reads a copy that is deleted once the job is done."""
    bucket = MemoryFileStore()
    world = new_world(recognizer_files=bucket)
    job = await world.submit()
    await world.step(State.CONVERT)
    checking = await world.step(State.RECOGNIZE)
    assert checking is not None
    copy = await world.repo.get_file(checking.storage_file_id or "")
    assert copy.id == storage_copy_id(job.id)
    assert await bucket.exists(copy)
    done = await world.run_to_end(job.id)
    assert done.state is State.DONE
    assert bucket.names() == []
    with pytest.raises(Exception, match="file"):
        await world.repo.get_file(copy.id)


async def test_storage_copy_removed_when_recognition_fails(new_world: NewWorld) -> None:
    """The Object Storage copy goes away when the job fails too."""
    bucket = MemoryFileStore()
    world = new_world(recognizer_files=bucket)
    world.recognizer.reject_next("no speech")
    job = await world.submit()
    assert (await world.run_to_end(job.id)).state is State.FAILED
    assert bucket.names() == []


async def test_orphan_storage_copy_removed_when_job_dies(new_world: NewWorld) -> None:
    """A copy uploaded by an attempt that crashed before pointing the job at it is removed too."""
    bucket = MemoryFileStore()
    world = new_world(recognizer_files=bucket)
    job = await world.submit()
    await world.step(State.CONVERT)
    for _ in range(world.services.settings.max_attempts):
        world.recognizer.fail_next_start(RecognizerUnavailable())
        result = await world.step(State.RECOGNIZE)
        assert result is not None
        assert result.storage_file_id is None
        assert result.delay_time is not None
        world.clock.set(result.delay_time)
    assert len(bucket.names()) == 1
    assert await world.step(State.RECOGNIZE) is None
    assert (await world.repo.get(job.id)).state is State.DEAD
    assert bucket.names() == []


async def test_local_files_stay_after_done(world: World) -> None:
    """The recording and its converted audio remain for the owner to download."""
    job = await world.submit()
    done = await world.run_to_end(job.id)
    for file_id in done.file_ids():
        record = await world.repo.get_file(file_id)
        assert record.location is Location.LOCAL
        assert await world.files.exists(record)


async def test_cancelled_intake_never_leaves_a_job_without_its_recording(world: World) -> None:
    """An intake cancelled after its insert committed keeps the recording the job points at."""
    committed = asyncio.Event()

    class SlowToAnswer(Delegate):
        async def create(
            self, job: Job, files: object = (), deliveries: object = ()
        ) -> tuple[Job, bool]:
            result: tuple[Job, bool] = await self.inner.create(job, files, deliveries)
            committed.set()
            await asyncio.Event().wait()  # the answer never reaches the caller
            return result

    world.services = attrs.evolve(world.services, repo=SlowToAnswer(world.repo))
    intake = asyncio.create_task(world.submit())
    await committed.wait()
    intake.cancel()
    with pytest.raises(asyncio.CancelledError):
        await intake
    [job] = await world.repo.list_jobs()
    source = await world.repo.get_file(job.source_file_id or "")
    assert await world.files.exists(source)


async def test_owner_ending_a_job_removes_its_storage_copy(new_world: NewWorld) -> None:
    """An owner moving a job in check to failed deletes the recognizer's copy, like the pipeline."""
    bucket = MemoryFileStore()
    world = new_world(recognizer_files=bucket)
    world.recognizer.checks_before_done = 100
    job = await world.submit()
    await world.step(State.CONVERT)
    checking = await world.step(State.RECOGNIZE)
    assert checking is not None
    assert len(bucket.names()) == 1
    changed = await edits.change_state(world.services, checking, State.FAILED)
    assert changed.state is State.FAILED
    assert bucket.names() == []
    assert (await world.repo.get(job.id)).state is State.FAILED


async def test_owner_edit_never_overwrites_a_result_saved_after_it_read(world: World) -> None:
    """A worker's save between the owner's read and the owner's save wins; the edit is refused."""
    job = await world.submit()
    await world.step(State.CONVERT)
    lease = await acquire_next(world.services, State.RECOGNIZE)
    assert lease is not None
    seen = await world.repo.get(job.id)
    checking = await process(world.services, lease)
    assert checking is not None
    assert checking.operation_id is not None
    with pytest.raises(JobChanged):
        await edits.change_state(world.services, seen, State.FAILED)
    stored = await world.repo.get(job.id)
    assert (stored.state, stored.operation_id) == (State.CHECK, checking.operation_id)
    assert len(world.recognizer.started) == 1


async def test_owner_revive_wakes_the_step_at_once(world: World) -> None:
    """A revived job wakes idle workers of its new state without waiting for a poll."""
    job = await world.submit()
    world.converter.fail_next(UnreadableMedia())
    failed = await world.step(State.CONVERT)
    assert failed is not None
    token = world.services.wakeup.token(State.CONVERT)
    revived = await edits.change_state(world.services, failed, State.CONVERT)
    assert token.is_set()
    assert (revived.state, revived.attempts, revived.error) == (State.CONVERT, 0, None)
    assert (await world.step(State.CONVERT)) is not None
    assert (await world.repo.get(job.id)).state is State.RECOGNIZE


async def _done_but_untold(world: World, error: Exception) -> Job:
    """A job that reaches done while the notifier fails its done notice once with ``error``."""
    job = await world.submit()
    await world.step(State.CONVERT)
    await world.step(State.RECOGNIZE)
    world.notifier.fail_next(error)
    await world.step(State.CHECK)
    assert (await world.repo.get(job.id)).state is State.DONE
    return job


async def test_a_notice_that_fails_now_is_sent_later(world: World) -> None:
    """A notice that meets throttling stays in the outbox and goes out after its pause."""
    job = await _done_but_untold(world, TransientError("throttled"))
    assert world.notifier.events_for(job.id) == [Event.ACCEPTED]
    assert await world.repo.pending_deliveries() == {DeliveryKind.NOTICE: 1}
    world.later(DEFAULT_SETTINGS.delivery_retry_base)
    assert await world.deliver() == 1
    assert world.notifier.events_for(job.id) == [Event.ACCEPTED, Event.DONE]
    assert await world.repo.pending_deliveries() == {}


async def test_a_notifier_asking_for_a_wait_gets_it(world: World) -> None:
    """The wait the notifier asks for (Telegram's retry_after) is the pause before the next try."""
    asked = timedelta(seconds=42)
    job = await _done_but_untold(world, NotifierUnavailable("slow down", retry_after=asked))
    world.later(asked - timedelta(microseconds=1))
    assert await world.deliver() == 0
    world.later(timedelta(microseconds=1))
    assert await world.deliver() == 1
    assert world.notifier.events_for(job.id) == [Event.ACCEPTED, Event.DONE]


async def test_a_failing_notice_is_given_up_after_its_window(world: World) -> None:
    """A notice failing for 24 hours is given up: logged, removed, the job still done."""
    job = await _done_but_untold(world, TransientError("down"))
    tries = 1
    while await world.repo.pending_deliveries():
        world.later(DEFAULT_SETTINGS.delivery_retry_cap)
        world.notifier.fail_next(TransientError("down"))
        tries += await world.deliver()
    # Tried every 10 minutes (the cap) for 24 hours, then given up.
    assert 140 < tries < 150
    assert world.notifier.events_for(job.id) == [Event.ACCEPTED]
    assert (await world.repo.get(job.id)).state is State.DONE


async def test_permanent_notifier_failure_is_not_repeated(world: World) -> None:
    """A refusal (blocked bot, gone chat) ends the delivery at once, not hammered for 24 h."""
    job = await _done_but_untold(world, TelegramLikeRefusal("the chat is gone"))
    world.notifier.fail_next(TransientError("would be consumed by a second try"))
    world.later(DEFAULT_SETTINGS.delivery_retry_cap)
    assert await world.deliver() == 0
    assert await world.repo.pending_deliveries() == {}
    with pytest.raises(TransientError, match="second try"):
        await world.notifier.notify(job, Event.DONE)


class TelegramLikeRefusal(TranscriberError):  # noqa: N818 - named like the adapter's own
    """A refusal, neither transient nor a step's judgement, as the Telegram adapter raises."""
