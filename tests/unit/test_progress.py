"""Recognition progress (ADR 51): the policy, what a reader is shown, and the step's notes."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from pathlib import Path

import attrs
import pytest

from tests.support.delegate import Delegate
from tests.support.world import World, make_world
from transcriber_core.entities import FileRecord, Job, Origin, Progress, State
from transcriber_core.errors import NotifierUnavailable
from transcriber_core.policy import (
    PROGRESS_INTERVAL,
    DecodeLimits,
    percent_done,
    progress_due,
    time_left,
)
from transcriber_core.ports import Event, ProgressCallback, Standing, Started
from transcriber_core.progress import ProgressReport, report_of

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


def progress(done: float, *, elapsed: float) -> Progress:
    return Progress(seconds_done=done, started=T0, updated=T0 + timedelta(seconds=elapsed))


def test_percent_is_rounded_down_and_bounded() -> None:
    """Whole percent, rounded down, never below 0 or above 100, and 0 for unknown lengths."""
    assert percent_done(0.0, 100.0) == 0
    assert percent_done(49.99, 100.0) == 49
    assert percent_done(130.0, 100.0) == 100
    assert percent_done(5.0, 0.0) == 0


def test_a_note_is_due_at_first_then_on_time_and_movement() -> None:
    """The first note is due; later ones need the interval passed and a percent more."""
    assert progress_due(percent=0, now=T0, last_percent=None, last_at=None)
    soon = T0 + PROGRESS_INTERVAL - timedelta(microseconds=1)
    assert not progress_due(percent=9, now=soon, last_percent=3, last_at=T0)
    on_time = T0 + PROGRESS_INTERVAL
    assert not progress_due(percent=3, now=on_time, last_percent=3, last_at=T0)
    assert progress_due(percent=4, now=on_time, last_percent=3, last_at=T0)


def test_time_left_is_the_pace_so_far_applied_to_the_rest() -> None:
    """25 % in 30 s leaves 90 s; below 5 % or with no time passed there is no estimate."""
    assert time_left(progress(25.0, elapsed=30), 100.0) == timedelta(seconds=90)
    assert time_left(progress(100.0, elapsed=30), 100.0) == timedelta(0)
    assert time_left(progress(4.9, elapsed=30), 100.0) is None
    assert time_left(progress(50.0, elapsed=0), 100.0) is None


def job_in(state: State, *, noted: Progress | None, duration: float | None = 200.0) -> Job:
    return Job(
        id="j",
        state=state,
        origin=Origin.http(),
        duration=duration,
        progress=noted,
        created=T0,
        updated=T0,
    )


def test_a_recognising_job_reports_percent_seconds_and_estimate() -> None:
    """A job in recognize with 50 of 200 s done in 20 s: 25 %, 60 s left, as of the note."""
    noted = progress(50.0, elapsed=20)
    assert report_of(job_in(State.RECOGNIZE, noted=noted)) == ProgressReport(
        percent=25, seconds_done=50.0, seconds_total=200.0, eta_seconds=60.0, updated=noted.updated
    )


def test_no_report_outside_recognition_or_without_a_length() -> None:
    """Queued, done, never noted or of unknown length: no progress is shown."""
    noted = progress(50.0, elapsed=20)
    assert report_of(job_in(State.CONVERT, noted=noted)) is None
    assert report_of(job_in(State.DONE, noted=noted)) is None
    assert report_of(job_in(State.RECOGNIZE, noted=None)) is None
    assert report_of(job_in(State.CHECK, noted=noted, duration=None)) is None


class Reporting(Delegate):
    """Works within ``start`` as a local engine does, reporting progress, and leaves it pending.

    Pending (no outcome) moves the job to check, which keeps its progress for the test to read.
    """

    def __init__(self, inner: object, world: World, calls: list[tuple[float, float]]) -> None:
        super().__init__(inner)
        self.world = world
        #: (seconds to move the clock first, seconds done) for each report.
        self.calls = calls

    async def start(
        self,
        audio: FileRecord,
        *,
        duration: float | None,
        on_progress: ProgressCallback | None = None,
        **_: object,
    ) -> Started:
        assert on_progress is not None
        for wait, seconds in self.calls:
            self.world.clock.advance(timedelta(seconds=wait))
            on_progress(seconds)
            # Let the note written in the background reach the store before the next call.
            for _turn in range(3):
                await asyncio.sleep(0)
        return Started(operation_id="op")


@pytest.fixture
def world(tmp_path: Path) -> World:
    made = make_world(tmp_path)
    made.converter.duration = 100.0
    # A few bytes stand for 100 s: the decoded-size rule is not under test here.
    made.converter.limits = DecodeLimits(min_bytes_per_second=0.01)
    return made


async def test_the_step_notes_progress_throttled_under_its_lease(world: World) -> None:
    """Notes are written at first, then only after the interval and with the percent moved."""
    # The first report comes 2 s in (the model loads): the progress begins at the start.
    calls = [(2.0, 2.0), (1.0, 30.0), (3.0, 30.5), (0.0, 31.0), (3.0, 45.0), (3.0, 45.5)]
    world.services = attrs.evolve(
        world.services, recognizer=Reporting(world.recognizer, world, calls)
    )
    job = await world.submit()
    await world.step(State.CONVERT)
    begun = world.clock.now()
    await world.step(State.RECOGNIZE)
    stored = await world.repo.get(job.id)
    assert stored.state is State.CHECK
    # Written: 2.0 (the first), 30.5 and 45.0; 30.0 and 31.0 came too soon after a note,
    # 45.5 was no whole percent more than the last one.
    assert stored.progress == Progress(
        seconds_done=45.0, started=begun, updated=begun + timedelta(seconds=9)
    )
    writes = [c for c in world.repo.calls if c == "save_progress_if_held"]  # type: ignore[attr-defined]
    assert len(writes) == 3


async def test_a_note_after_the_lease_is_lost_writes_nothing(world: World) -> None:
    """A worker whose lease passed on notes nothing, and its recognition is not failed for it."""

    class LosingLease(Reporting):
        async def start(self, audio: FileRecord, **kwargs: object) -> Started:
            stored = await self.world.repo.get(job.id)
            # Another worker takes the job over (its lease ran out).
            await self.world.repo.save_if_held(
                attrs.evolve(stored, acquisition_id="someone-else"),
                acquisition_id=stored.acquisition_id or "",
            )
            return await super().start(audio, **kwargs)  # type: ignore[arg-type]

    world.services = attrs.evolve(
        world.services, recognizer=LosingLease(world.recognizer, world, [(0.0, 50.0)])
    )
    job = await world.submit()
    await world.step(State.CONVERT)
    await world.step(State.RECOGNIZE)
    stored = await world.repo.get(job.id)
    assert stored.progress is None
    assert stored.acquisition_id == "someone-else"


class StatusKeeper:
    """A notifier that keeps a status message (id 900), records each standing, fails on demand."""

    def __init__(self) -> None:
        self.told: list[tuple[Event, Standing | None]] = []
        self.fail_progress: Exception | None = None

    async def notify(
        self, job: Job, event: Event, *, standing: Standing | None = None
    ) -> int | None:
        if event is Event.PROGRESS and self.fail_progress is not None:
            error, self.fail_progress = self.fail_progress, None
            raise error
        self.told.append((event, standing))
        return 900


async def test_the_status_message_id_is_kept_and_handed_to_later_notices(world: World) -> None:
    """The id the notifier answers is stored on the job; each later notice is given it."""
    keeper = StatusKeeper()
    world.services = attrs.evolve(world.services, notifier=keeper)
    job = await world.submit(origin=Origin.telegram(chat_id=7, message_id=70))
    assert (await world.repo.get(job.id)).status_message_id == 900
    done = await world.run_to_end(job.id)
    assert done.state is State.DONE
    events = [event for event, _ in keeper.told]
    # Accepted, a move to recognize and one to check (the memory recognizer polls), done.
    assert events == [Event.ACCEPTED, Event.PROGRESS, Event.PROGRESS, Event.DONE]
    assert keeper.told[0][1] == Standing(queue_position=0)
    assert all(
        standing is not None and standing.message_id == 900 for _, standing in keeper.told[1:]
    )


async def test_a_failed_progress_notice_is_dropped_not_retried(world: World) -> None:
    """A status edit that fails without a wait asked is given up: the transcript is not held."""
    keeper = StatusKeeper()
    world.services = attrs.evolve(world.services, notifier=keeper)
    job = await world.submit(origin=Origin.telegram(chat_id=7, message_id=70))
    keeper.fail_progress = NotifierUnavailable("network")
    await world.run_to_end(job.id)
    assert await world.repo.pending_deliveries() == {}
    assert [event for event, _ in keeper.told][-1] is Event.DONE


async def test_http_jobs_owe_no_progress_notices(world: World) -> None:
    """A job sent over HTTP has no chat: its moves and notes write no notice."""
    job = await world.submit(origin=Origin.http())
    await world.run_to_end(job.id)
    assert world.notifier.standings == []
