"""Recordings longer than the recognizer takes, step by step (ADR 26).

Memory adapters for files, converter and recognizer; the job repository is
memory or SQLite on a real file, as in ``test_pipeline``.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from pathlib import Path

import attrs
import pytest

from tests.support.delegate import Delegate
from tests.support.world import World, make_world
from transcriber_adapters.memory import ManualClock, MemoryFileStore, MemoryUsageStore
from transcriber_core.entities import FileRecord, Origin, State
from transcriber_core.errors import ConverterUnavailable, RecognizerUnavailable
from transcriber_core.intake import submit
from transcriber_core.policy import DecodeLimits
from transcriber_core.ports import JobRepository, RecognizerLimits, Silence, Started
from transcriber_core.progress import report_of

NewWorld = Callable[..., World]


@pytest.fixture
def new_world(tmp_path: Path, repo: JobRepository, clock: ManualClock) -> NewWorld:
    """A world whose recordings last 150 s and whose recognizer takes 60 s at most."""

    def make(**options: object) -> World:
        world = make_world(tmp_path, repo=repo, clock=clock, **options)  # type: ignore[arg-type]
        world.converter.duration = 150.0
        # A few bytes stand for 150 s: the decoded-size rule is not under test here.
        world.converter.limits = DecodeLimits(min_bytes_per_second=0.01)
        world.converter.silences = (Silence(start=50, end=51), Silence(start=100, end=102))
        world.recognizer.limits = RecognizerLimits(max_seconds=60)
        return world

    return make


async def converted(world: World) -> str:
    """Submit a recording and run its convert step; the job's id."""
    job = await world.submit()
    await world.step(State.CONVERT)
    return job.id


async def test_long_recording_is_split_at_silences_and_joined(new_world: NewWorld) -> None:
    """150 s with a 60 s limit: three parts cut in the silences, texts and timings joined."""
    world = new_world()
    for text in ("первая часть", "вторая часть", "третья часть"):
        world.recognizer.finish_next(text)
    job = await world.run_to_end(await converted(world))
    assert job.state is State.DONE, job.error
    assert job.text == "первая часть вторая часть третья часть"
    parts = await world.repo.get_parts(job.id)
    assert [(p.start, p.end) for p in parts] == [(0, 50.5), (50.5, 101), (101, 150)]
    assert world.converter.cuts == [(0, 50.5), (50.5, 101), (101, 150)]
    assert len(world.recognizer.started) == 3
    starts = [word.start for word in job.words]
    assert starts == sorted(starts)
    assert job.words[2].start >= 50.5
    assert job.words[4].start >= 101
    assert all(p.done and p.file_id for p in parts)
    assert job.operation_id is None


async def test_a_failed_start_retries_that_part_alone(new_world: NewWorld) -> None:
    """Part 2's start fails: it pauses on its own attempts; parts 1 and 3 go on, none redone."""
    world = new_world()
    world.recognizer.finish_next("one")
    flaky = FailingNthStart(world.services.recognizer, fail_at=2)
    world.services = attrs.evolve(world.services, recognizer=flaky)
    job_id = await converted(world)
    planned = await world.step(State.RECOGNIZE)
    assert planned is not None
    assert planned.state is State.CHECK
    assert all(p.operation_id is None for p in await world.repo.get_parts(job_id))
    await run_parts(world)
    first, failed, third = await world.repo.get_parts(job_id)
    assert first.done
    assert third.done
    assert (failed.operation_id, failed.attempts) == (None, 1)
    assert failed.error is not None
    assert failed.delay_time is not None
    assert failed.delay_time > world.clock.now()
    job = await world.run_to_end(job_id)
    assert job.state is State.DONE, job.error
    assert len(world.recognizer.started) == 3
    assert (await world.repo.get_parts(job_id))[0].operation_id == first.operation_id
    assert job.text is not None
    assert job.text.startswith("one ")


async def run_parts(world: World) -> int:
    """Run every part that may be taken now, as idle part loops would; how many steps."""
    steps = 0
    while await world.step_part() is not None:
        steps += 1
    return steps


async def test_a_done_part_is_never_checked_again(new_world: NewWorld) -> None:
    """Part 2 still running: parts 1 and 3 are done at the first check and left alone after."""
    world = new_world()
    world.recognizer.finish_next("a")
    world.recognizer.finish_next("b", pending_checks=3)
    world.recognizer.finish_next("c")
    job = await world.run_to_end(await converted(world))
    assert job.text == "a b c"
    checks = [world.recognizer.operations[op].checks for op in world.recognizer.started]
    assert checks == [1, 4, 1]


async def test_status_counts_parts_as_they_finish(new_world: NewWorld) -> None:
    """After each part started and was checked once, two of three are done; the job waits."""
    world = new_world()
    world.recognizer.finish_next("a")
    world.recognizer.finish_next("b", pending_checks=3)
    job_id = await converted(world)
    await world.step(State.RECOGNIZE)
    # The memory recognizer advises no wait: each part is started, then checked at once.
    assert await run_parts(world) == 6
    parts = await world.repo.get_parts(job_id)
    assert [p.done for p in parts] == [True, False, True]
    assert (await world.repo.get(job_id)).state is State.CHECK


async def test_a_rejected_part_fails_the_job_naming_the_part(new_world: NewWorld) -> None:
    """One part the recognizer rejects fails the job; the reason says which part."""
    world = new_world()
    world.recognizer.finish_next("a")
    world.recognizer.reject_next("unreadable audio")
    job = await world.run_to_end(await converted(world))
    assert job.state is State.FAILED
    assert job.error == "part 2 of 3: unreadable audio"


async def test_each_part_copy_is_removed_once_done(new_world: NewWorld) -> None:
    """With Object Storage every part gets its own copy, deleted when its part is done."""
    bucket = MemoryFileStore()
    world = new_world(recognizer_files=bucket)
    world.recognizer.finish_next("a")
    world.recognizer.finish_next("b", pending_checks=3)
    job_id = await converted(world)
    await world.step(State.RECOGNIZE)
    await run_parts(world)
    parts = await world.repo.get_parts(job_id)
    copies = {p.storage_file_id for p in parts}
    assert len(copies) == 3
    assert None not in copies
    assert len(bucket.names()) == 1  # only the running part's copy is left
    job = await world.run_to_end(job_id)
    assert job.state is State.DONE
    assert bucket.names() == []


async def test_part_copies_are_removed_when_the_job_fails(new_world: NewWorld) -> None:
    """A failed split job leaves no copy in Object Storage, done parts or not."""
    bucket = MemoryFileStore()
    world = new_world(recognizer_files=bucket)
    world.recognizer.reject_next("no", pending_checks=1)
    job = await world.run_to_end(await converted(world))
    assert job.state is State.FAILED
    assert bucket.names() == []


async def test_unmeasured_audio_is_recognised_whole_and_refused_naming_the_limit(
    new_world: NewWorld,
) -> None:
    """No duration: no blind split; the recognizer refuses it for size and says its limit."""
    world = new_world()
    world.recognizer.limits = RecognizerLimits(max_seconds=60, max_bytes=10)
    job_id = await converted(world)
    seen = await world.repo.get(job_id)
    await world.repo.save_if_unchanged(attrs.evolve(seen, duration=None), seen=seen)
    job = await world.run_to_end(job_id)
    assert job.state is State.FAILED
    assert job.error == "the audio is larger than the recognizer's limit of 10 bytes"
    assert await world.repo.get_parts(job_id) == []
    assert world.converter.cuts == []


async def test_audio_within_the_limit_goes_whole(new_world: NewWorld) -> None:
    """A recording that fits is one operation and has no parts, as before."""
    world = new_world()
    world.converter.duration = 59.0
    job = await world.run_to_end(await converted(world))
    assert job.state is State.DONE
    assert job.operation_id is not None
    assert await world.repo.get_parts(job.id) == []
    assert world.converter.cuts == []


async def test_parts_written_by_a_worker_that_lost_its_lease_are_refused(
    new_world: NewWorld,
) -> None:
    """A part step whose part lease passed on writes nothing more (fencing per part)."""
    world = new_world()
    job_id = await converted(world)
    await world.step(State.RECOGNIZE)
    stolen = StealingRecognizer(world)
    world.services = attrs.evolve(world.services, recognizer=stolen)
    assert await world.step_part() is None
    first = (await world.repo.get_parts(job_id))[0]
    assert (first.acquisition_id, first.operation_id) == ("thief", None)


class FailingNthStart(Delegate):
    """The real recognizer, but its ``fail_at``-th start (from 1) is unavailable."""

    def __init__(self, inner: object, *, fail_at: int) -> None:
        super().__init__(inner)
        self._count = itertools.count(1)
        self._fail_at = fail_at

    async def start(self, audio: FileRecord, *, duration: float | None, **_: object) -> Started:
        if next(self._count) == self._fail_at:
            raise RecognizerUnavailable()
        started: Started = await self.inner.start(audio, duration=duration, **_)
        return started


class StealingRecognizer(Delegate):
    """Before the first start, another worker takes the part over (its lease lapsed)."""

    def __init__(self, world: World) -> None:
        super().__init__(world.recognizer)
        self._world = world

    async def start(self, audio: FileRecord, *, duration: float | None, **_: object) -> Started:
        world = self._world
        world.clock.advance(world.services.settings.lease * 2)
        taken = await world.repo.acquire_part(
            acquisition_id="thief", lease=world.services.settings.lease
        )
        assert taken is not None
        started: Started = await self.inner.start(audio, duration=duration, **_)
        return started


async def test_progress_is_the_seconds_of_the_parts_done(new_world: NewWorld) -> None:
    """Planning begins the progress at 0; the job's check notes the seconds of the parts done."""
    world = new_world()
    world.recognizer.finish_next("a")
    world.recognizer.finish_next("b", pending_checks=3)
    job_id = await converted(world)
    planned_at = world.clock.now()
    await world.step(State.RECOGNIZE)
    job = await world.repo.get(job_id)
    assert job.progress is not None
    assert (job.progress.seconds_done, job.progress.started) == (0.0, planned_at)
    await run_parts(world)  # parts 1 and 3 done, part 2 still pending
    world.clock.set(max(job.delay_time or planned_at, world.clock.now()))
    await world.step(State.CHECK)
    job = await world.repo.get(job_id)
    assert job.progress is not None
    # Parts 1 and 3 are done: 50.5 s and 49 s of the 150.
    assert job.progress.seconds_done == pytest.approx(99.5)
    assert job.progress.started == planned_at
    report = report_of(job)
    assert report is not None
    assert report.percent == 66


async def test_a_split_retried_recording_counts_its_seconds_once(new_world: NewWorld) -> None:
    """A convert retried and three parts, one retried: the payer's day holds 150 s, once."""
    world = new_world()
    usage = MemoryUsageStore(world.clock)
    world = attrs.evolve(world, services=attrs.evolve(world.services, usage=usage))
    source = world.tmp / "upload"
    source.write_bytes(b"RIFF fake recording bytes")
    job, _ = await submit(
        world.services, source, extension=".ogg", origin=Origin.http(), payer="telegram:7"
    )
    assert (await usage.usage(["telegram:7"]))["telegram:7"].today == 0  # no header length
    world.converter.fail_next(ConverterUnavailable())
    world.recognizer.fail_next_start(RecognizerUnavailable())
    for text in ("one", "two", "three"):
        world.recognizer.finish_next(text)
    done = await world.run_to_end(job.id)
    assert done.state is State.DONE, done.error
    assert len(await world.repo.get_parts(job.id)) == 3
    assert (await usage.usage(["telegram:7"]))["telegram:7"].today == 150.0
    assert [job_id for job_id, _ in usage.charges] == [job.id]
