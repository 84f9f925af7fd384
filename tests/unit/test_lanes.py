"""The express lane and loops per step (ADR 27): marks, lanes, and draining them all."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from pathlib import Path

import attrs
import pytest

from tests.support.world import World, make_world
from transcriber_core.entities import Origin, State
from transcriber_core.intake import submit
from transcriber_core.policy import DecodeLimits, Settings, is_express_loop, is_short
from transcriber_core.ports import Converter, Event, ProgressCallback
from transcriber_core.worker import Workers, acquire_next, process

#: Small numbers so a test's recordings fall on either side: 100 bytes, 60 seconds.
LANES = Settings(
    express_bytes=100,
    express_duration=timedelta(seconds=60),
    idle_poll_interval=timedelta(hours=1),
)
SMALL = b"s" * 50
BIG = b"b" * 200


class FixedProbe:
    """A duration probe that declares what the test says."""

    def __init__(self, seconds: float | None) -> None:
        self.seconds = seconds

    async def declared_duration(self, path: Path) -> float | None:
        return self.seconds


class HeldBySize:
    """Holds each conversion of a source bigger than ``threshold`` until the test releases it."""

    def __init__(self, inner: Converter, threshold: int) -> None:
        self.inner = inner
        self.threshold = threshold
        self.release = asyncio.Event()
        self.running = 0
        self.started = asyncio.Condition()
        self.cancelled = 0

    @property
    def output_extension(self) -> str:
        return self.inner.output_extension

    async def convert(
        self,
        source: Path,
        target: Path,
        *,
        on_progress: ProgressCallback | None = None,
        background: bool = False,
    ) -> float:
        if source.stat().st_size > self.threshold:
            async with self.started:
                self.running += 1
                self.started.notify_all()
            try:
                await self.release.wait()
            except asyncio.CancelledError:
                self.cancelled += 1
                raise
        return await self.inner.convert(
            source, target, on_progress=on_progress, background=background
        )

    async def wait_running(self, count: int) -> None:
        async with asyncio.timeout(10), self.started:
            await self.started.wait_for(lambda: self.running >= count)


class Overrunning:
    """Reports ever more seconds of output and never finishes on its own: a decode bomb."""

    def __init__(self) -> None:
        self.cancelled = asyncio.Event()

    @property
    def output_extension(self) -> str:
        return ".ogg"

    async def convert(
        self,
        source: Path,
        target: Path,
        *,
        on_progress: ProgressCallback | None = None,
        background: bool = False,
    ) -> float:
        assert on_progress is not None
        try:
            seconds = 0.0
            while True:
                seconds += 30
                on_progress(seconds)
                await asyncio.sleep(0)
        except asyncio.CancelledError:
            self.cancelled.set()
            raise


@pytest.fixture
def world(tmp_path: Path) -> World:
    """Memory adapters with the small lane limits; the converter lets tiny files last minutes."""
    world = make_world(tmp_path, settings=LANES)
    world.converter.limits = DecodeLimits(min_bytes_per_second=0.01)
    return world


# -- the mark at intake ------------------------------------------------------------


def test_short_is_small_and_not_known_to_be_long() -> None:
    """Bytes decide first; a declared duration can only take the mark away; unknown keeps it."""
    assert is_short(100, None, LANES)
    assert is_short(100, 60.0, LANES)
    assert not is_short(101, None, LANES)
    assert not is_short(101, 1.0, LANES)
    assert not is_short(10, 60.5, LANES)


def test_one_loop_of_two_or_more_is_the_express_lane() -> None:
    """A lone loop takes every job; of two or more, exactly the first is express."""
    assert [is_express_loop(i, 1) for i in range(1)] == [False]
    assert [is_express_loop(i, 2) for i in range(2)] == [True, False]
    assert [is_express_loop(i, 4) for i in range(4)] == [True, False, False, False]


@pytest.mark.parametrize(
    ("data", "declared", "short"),
    [(SMALL, None, True), (SMALL, 30.0, True), (SMALL, 3600.0, False), (BIG, None, False)],
)
async def test_intake_marks_the_job(
    world: World, data: bytes, declared: float | None, *, short: bool
) -> None:
    """Intake marks a job short from its size and the header's declared duration."""
    world.services = attrs.evolve(world.services, probe=FixedProbe(declared))
    source = world.tmp / "upload"
    source.write_bytes(data)
    job, _ = await submit(world.services, source, extension=".wav", origin=Origin.http())
    assert (await world.repo.get(job.id)).short is short


# -- the convert step corrects the mark ----------------------------------------------


async def test_a_short_job_measured_long_leaves_the_lane(world: World) -> None:
    """Convert measures the real duration; a job longer than the limit is long from then on."""
    world.converter.duration = 61.0
    job = await world.submit(SMALL)
    assert job.short
    converted = await world.step(State.CONVERT)
    assert converted is not None
    assert (converted.state, converted.short) == (State.RECOGNIZE, False)
    lease = await acquire_next(world.services, State.RECOGNIZE, short_only=True)
    assert lease is None


async def test_a_measured_short_job_keeps_its_mark(world: World) -> None:
    """A recording within the limit stays in the express lane for recognize and check."""
    world.converter.duration = 59.0
    await world.submit(SMALL)
    converted = await world.step(State.CONVERT)
    assert converted is not None
    assert converted.short
    assert await acquire_next(world.services, State.RECOGNIZE, short_only=True) is not None


async def test_only_a_long_job_converts_in_the_background(world: World) -> None:
    """A long job's conversion is asked for at background priority, a short one's not (ADR 63)."""
    world.converter.duration = 30.0
    for data in (BIG, SMALL):
        await world.submit(data)
        assert await world.step(State.CONVERT) is not None
    assert [call.background for call in world.converter.calls] == [True, False]


async def test_a_decode_bomb_is_stopped_at_the_express_limit(world: World) -> None:
    """A small file that decodes past the limit is stopped there and handed back as long."""
    bomb = Overrunning()
    world.services = attrs.evolve(world.services, converter=bomb)
    job = await world.submit(SMALL)
    lease = await acquire_next(world.services, State.CONVERT, short_only=True)
    assert lease is not None
    async with asyncio.timeout(10):
        back = await process(world.services, lease)
    assert bomb.cancelled.is_set()
    assert back is not None
    assert (back.state, back.short, back.attempts, back.error) == (State.CONVERT, False, 0, None)
    assert back.converted_file_id is None
    # The general lane takes it next; the express lane no longer sees it.
    assert await acquire_next(world.services, State.CONVERT, short_only=True) is None
    general = await acquire_next(world.services, State.CONVERT)
    assert general is not None
    assert general.job.id == job.id


# -- loops per step ------------------------------------------------------------------


async def test_a_short_job_passes_long_ones_that_hold_the_general_loop(world: World) -> None:
    """Two convert loops, two long jobs queued first: the express loop does the short one."""
    held = HeldBySize(world.converter, threshold=100)
    world.services = attrs.evolve(world.services, converter=held)
    workers = Workers(world.services, {State.CONVERT: 2, State.RECOGNIZE: 2, State.CHECK: 2})
    workers.start()
    try:
        first = await world.submit(BIG)
        second = await world.submit(BIG)
        await held.wait_running(1)
        clip = await world.submit(SMALL)
        async with asyncio.timeout(10):
            await world.notifier.wait_for(clip.id, Event.DONE)
        leased = [
            (await world.repo.get(job.id)).acquisition_id is not None for job in (first, second)
        ]
        assert leased == [True, False]
        assert held.running == 1
        held.release.set()
        for job in (first, second):
            async with asyncio.timeout(10):
                await world.notifier.wait_for(job.id, Event.DONE)
    finally:
        held.release.set()
        await workers.drain(grace=1)


def test_negative_loop_counts_are_refused(world: World) -> None:
    """A negative count is a mistake, not "none": Workers refuses it."""
    with pytest.raises(ValueError, match="-1"):
        Workers(world.services, {State.CONVERT: -1})


async def test_drain_finishes_or_cancels_every_loop(world: World) -> None:
    """Shutdown with several steps running at once: released ones save, the rest are cancelled."""
    held = HeldBySize(world.converter, threshold=100)
    world.services = attrs.evolve(world.services, converter=held)
    workers = Workers(world.services, {State.CONVERT: 4, State.RECOGNIZE: 2, State.CHECK: 2})
    workers.start()
    jobs = [await world.submit(BIG) for _ in range(3)]
    await held.wait_running(3)
    draining = asyncio.create_task(workers.drain(grace=0.2))
    async with asyncio.timeout(10):
        await draining
    assert held.cancelled == 3
    for job in jobs:
        stored = await world.repo.get(job.id)
        assert (stored.state, stored.acquisition_id is not None) == (State.CONVERT, True)
    running = [
        task
        for task in asyncio.all_tasks()
        if task.get_name().startswith("transcriber-") and not task.done()
    ]
    assert running == []


async def test_drain_lets_every_running_step_finish_within_grace(world: World) -> None:
    """Steps that end within the grace save their results, in every loop at once."""
    held = HeldBySize(world.converter, threshold=100)
    world.services = attrs.evolve(world.services, converter=held)
    workers = Workers(world.services, {State.CONVERT: 4})
    workers.start()
    jobs = [await world.submit(BIG) for _ in range(3)]
    await held.wait_running(3)
    draining = asyncio.create_task(workers.drain(grace=10))
    held.release.set()
    async with asyncio.timeout(10):
        await draining
    assert held.cancelled == 0
    states = [(await world.repo.get(job.id)).state for job in jobs]
    assert states == [State.RECOGNIZE] * 3
