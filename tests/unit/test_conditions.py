"""The service's own faults (disk full, keys refused) make jobs wait, never die."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import attrs
import pytest

from tests.support.world import HOST, World, make_world
from transcriber_core.entities import EVERYWHERE, State
from transcriber_core.errors import (
    BudgetSpent,
    DatabaseDown,
    DiskFull,
    InvalidTransition,
    RecognizerCredentialsRejected,
    RecognizerDown,
    RecognizerThrottled,
    RecognizerUnavailable,
    RepositoryUnavailable,
    ServiceCondition,
    StorageBucketMissing,
    StorageCredentialsRejected,
    StorageDown,
    StorageUnavailable,
    TransientError,
)
from transcriber_core.policy import (
    Settings,
    condition_pause,
    condition_scope,
    conditions_cleared_by,
    outage_pause,
)
from transcriber_core.ports import Event
from transcriber_core.transitions import Actor, transition
from transcriber_core.worker import Outages, acquire_next, process


@pytest.fixture
def world(tmp_path: Path) -> World:
    return make_world(tmp_path)


# -- policy ---------------------------------------------------------------------


def test_condition_pause_is_fixed_whatever_the_repetition() -> None:
    """A condition's wait does not grow: space or a new key may come back at any moment."""
    settings = Settings(condition_pause=timedelta(seconds=30))
    assert condition_pause(DiskFull(), settings) == timedelta(seconds=30)
    assert condition_pause(RecognizerCredentialsRejected(), settings) == timedelta(seconds=30)


def test_condition_pause_takes_a_longer_vendor_wait_up_to_the_cap() -> None:
    """A Retry-After longer than the pause is honoured, but never past the cap."""
    settings = Settings(
        condition_pause=timedelta(seconds=30), condition_pause_cap=timedelta(minutes=5)
    )
    asked = RecognizerThrottled(retry_after=timedelta(seconds=90))
    assert condition_pause(asked, settings) == timedelta(seconds=90)
    greedy = RecognizerThrottled(retry_after=timedelta(hours=2))
    assert condition_pause(greedy, settings) == timedelta(minutes=5)
    short = RecognizerThrottled(retry_after=timedelta(seconds=1))
    assert condition_pause(short, settings) == timedelta(seconds=30)


def test_a_budget_turn_is_waited_whole_short_or_past_the_cap() -> None:
    """A spent budget's wait is exact (ADR 61): kept as told, below the pause or past the cap."""
    settings = Settings(
        condition_pause=timedelta(seconds=30), condition_pause_cap=timedelta(minutes=5)
    )
    assert condition_pause(BudgetSpent(retry_after=timedelta(seconds=8)), settings) == timedelta(
        seconds=8
    )
    turn = timedelta(minutes=40)
    assert condition_pause(BudgetSpent(retry_after=turn), settings) == turn


def test_disk_conditions_belong_to_the_host_and_keys_to_everyone() -> None:
    """A full disk is one host's; refused credentials and a missing bucket hold everywhere."""
    assert condition_scope(DiskFull(), "h1") == "h1"
    assert condition_scope(RecognizerCredentialsRejected(), "h1") == EVERYWHERE
    assert condition_scope(StorageCredentialsRejected(), "h1") == EVERYWHERE
    assert condition_scope(StorageBucketMissing(), "h1") == EVERYWHERE


def test_each_step_clears_what_it_used() -> None:
    """Convert proves the disk, recognize the bucket and both keys, check the recognizer's key."""
    assert conditions_cleared_by(State.CONVERT) == {
        "disk_full",
        "storage_unavailable",
        "database_unavailable",
    }
    assert "recognizer_unavailable" in conditions_cleared_by(State.RECOGNIZE)
    assert "recognizer_unavailable" in conditions_cleared_by(State.CHECK)
    assert "storage_bucket_missing" in conditions_cleared_by(State.RECOGNIZE)
    assert "recognizer_credentials_rejected" in conditions_cleared_by(State.CHECK)
    assert "disk_full" not in conditions_cleared_by(State.CHECK)
    assert conditions_cleared_by(State.DONE) == frozenset()


async def test_conditions_age_out(world: World) -> None:
    """A condition nobody ran into for ``condition_max_age`` (the store's clock) no longer holds."""
    age = world.services.settings.condition_max_age
    await world.conditions.report("disk_full", scope=HOST, message="m")
    world.later(age - timedelta(microseconds=1))
    assert len(await world.conditions.current(scopes=frozenset({HOST}), within=age)) == 1
    world.later(timedelta(microseconds=1))
    assert await world.conditions.current(scopes=frozenset({HOST}), within=age) == []


def test_settings_refuse_an_age_shorter_than_the_pause() -> None:
    """A condition that still holds is seen every pause; it must not age out in between."""
    with pytest.raises(ValueError, match="condition_max_age"):
        Settings(condition_pause=timedelta(minutes=10), condition_max_age=timedelta(minutes=5))


# -- the transition ----------------------------------------------------------------


async def test_waiting_gives_back_the_attempt(world: World) -> None:
    """A retry keeps the acquire's attempt; a wait for the service gives it back."""
    job = attrs.evolve(await world.submit(), attempts=3)
    now = world.clock.now()
    retried = transition(job, State.CONVERT, now=now, error="retry", delay_until=now)
    assert retried.attempts == 3
    waited = transition(
        job, State.CONVERT, now=now, error="disk", delay_until=now, attempt_spent=False
    )
    assert waited.attempts == 2
    assert waited.state is State.CONVERT
    assert waited.error == "disk"
    assert waited.acquisition_id is None


async def test_waiting_must_stay_in_its_state_with_reason_and_delay(world: World) -> None:
    """A wait that moves the job, or carries no reason or delay, is refused."""
    job = await world.submit()
    now = world.clock.now()
    with pytest.raises(InvalidTransition):
        transition(job, State.FAILED, now=now, error="e", delay_until=now, attempt_spent=False)
    with pytest.raises(InvalidTransition):
        transition(job, State.CONVERT, now=now, delay_until=now, attempt_spent=False)
    with pytest.raises(InvalidTransition):
        transition(job, State.CONVERT, now=now, error="e", attempt_spent=False)
    with pytest.raises(InvalidTransition):
        transition(job, State.CONVERT, now=now, actor=Actor.OWNER, attempt_spent=False)


# -- the worker --------------------------------------------------------------------


async def test_service_condition_does_not_spend_the_attempt(world: World) -> None:
    """A full disk during convert: the job waits the condition pause with attempts unchanged."""
    job = await world.submit()
    world.converter.fail_next(DiskFull())
    before = world.clock.now()
    result = await world.step(State.CONVERT)
    assert result is not None
    assert result.state is State.CONVERT
    assert result.attempts == 0
    assert result.delay_time == before + world.services.settings.condition_pause
    stored = await world.repo.get(job.id)
    assert stored.attempts == 0
    assert stored.error == DiskFull().message


@pytest.mark.parametrize(
    "condition",
    [
        DiskFull(),
        RecognizerCredentialsRejected(),
        RecognizerThrottled(),
        StorageCredentialsRejected(),
        StorageBucketMissing(),
        RecognizerDown(),
        StorageDown(),
        DatabaseDown(),
    ],
)
async def test_never_dead_after_many_conditions(world: World, condition: ServiceCondition) -> None:
    """Many times the max attempts of a condition leave the job waiting, not dead, sender untold."""
    job = await world.submit()
    settings = world.services.settings
    for _ in range(settings.max_attempts * 4):
        world.converter.fail_next(condition)
        result = await world.step(State.CONVERT)
        assert result is not None
        assert result.state is State.CONVERT
        assert result.attempts == 0
        assert result.delay_time is not None
        world.clock.set(result.delay_time)
    assert (await world.repo.get(job.id)).state is State.CONVERT
    assert world.notifier.events_for(job.id) == [Event.ACCEPTED]


async def test_earlier_failures_still_count_after_a_wait(world: World) -> None:
    """A wait gives back only its own attempt: two real failures before it still count."""
    job = await world.submit()
    for error in (StorageUnavailable(), StorageUnavailable(), DiskFull()):
        world.converter.fail_next(error)
        result = await world.step(State.CONVERT)
        assert result is not None
        assert result.delay_time is not None
        world.clock.set(result.delay_time)
    assert (await world.repo.get(job.id)).attempts == 2


async def test_job_resumes_by_itself_when_the_condition_clears(world: World) -> None:
    """Once the disk has room again the job's next attempt goes through to done."""
    job = await world.submit()
    world.converter.fail_next(DiskFull())
    await world.step(State.CONVERT)
    assert await world.step(State.CONVERT) is None
    done = await world.run_to_end(job.id)
    assert done.state is State.DONE
    assert done.error is None
    assert world.notifier.events_for(job.id) == [Event.ACCEPTED, Event.DONE]


async def test_condition_is_reported_in_its_scope(world: World) -> None:
    """A full disk is noted for this host; refused credentials for the whole deployment."""
    await world.submit()
    world.converter.fail_next(DiskFull())
    await world.step(State.CONVERT)
    await world.submit()
    world.converter.fail_next(StorageCredentialsRejected())
    await world.step(State.CONVERT)
    held = await world.conditions.current(
        scopes=frozenset({HOST, EVERYWHERE}), within=timedelta(minutes=1)
    )
    assert [(c.code, c.scope) for c in held] == [
        ("disk_full", HOST),
        ("storage_credentials_rejected", EVERYWHERE),
    ]
    other_host = await world.conditions.current(
        scopes=frozenset({"worker-host-b", EVERYWHERE}), within=timedelta(minutes=1)
    )
    assert [c.code for c in other_host] == ["storage_credentials_rejected"]


async def test_a_finished_step_clears_what_it_used(world: World) -> None:
    """A working convert clears disk_full; a refused recognizer key stays until recognize works."""
    job = await world.submit()
    await world.conditions.report("disk_full", scope=HOST, message="m")
    await world.conditions.report("recognizer_credentials_rejected", scope=EVERYWHERE, message="m")
    await world.step(State.CONVERT)
    everywhere = frozenset({HOST, EVERYWHERE})
    left = await world.conditions.current(scopes=everywhere, within=timedelta(days=1))
    assert [c.code for c in left] == ["recognizer_credentials_rejected"]
    await world.run_to_end(job.id)
    assert await world.conditions.current(scopes=everywhere, within=timedelta(days=1)) == []


async def test_a_failing_condition_store_does_not_stop_the_wait(world: World) -> None:
    """When the store cannot note the condition (its database on the full disk), the job waits."""

    class Broken:
        async def report(self, *args: object, **kwargs: object) -> None:
            raise StorageUnavailable

    world.services = attrs.evolve(world.services, conditions=Broken())  # type: ignore[arg-type]
    job = await world.submit()
    world.converter.fail_next(DiskFull())
    result = await world.step(State.CONVERT)
    assert result is not None
    assert result.attempts == 0
    assert (await world.repo.get(job.id)).state is State.CONVERT


# -- outages of a dependency (issue 26) -------------------------------------------


def test_outages_are_conditions_and_still_the_transient_error_of_their_kind() -> None:
    """Code that only retries a call (the outbox, a cleanup) still catches an outage as before."""
    assert isinstance(RecognizerDown(), RecognizerUnavailable)
    assert isinstance(StorageDown(), StorageUnavailable)
    assert isinstance(DatabaseDown(), RepositoryUnavailable)
    for outage in (RecognizerDown(), StorageDown(), DatabaseDown()):
        assert isinstance(outage, ServiceCondition)
        assert isinstance(outage, TransientError)
        assert outage.outage
        assert outage.fault
        assert condition_scope(outage, "h1") == EVERYWHERE
    assert not DiskFull().outage


def test_outage_pause_backs_off_up_to_the_condition_pause() -> None:
    """1 s, 2 s, 4 s ... after each outage in a row, never past ``condition_pause``."""
    settings = Settings(retry_base=timedelta(seconds=1), condition_pause=timedelta(seconds=10))
    pauses = [outage_pause(streak, settings).total_seconds() for streak in range(1, 7)]
    assert pauses == [1, 2, 4, 8, 10, 10]
    assert outage_pause(10_000, settings) == timedelta(seconds=10)


async def test_an_outage_pauses_the_step_for_everyone_with_growing_waits(world: World) -> None:
    """Each outage in a row doubles the job's wait and the step's pause; a success ends it."""
    await world.submit()
    outages = Outages()
    waits = []
    for _ in range(3):
        world.converter.fail_next(StorageDown())
        lease = await acquire_next(world.services, State.CONVERT)
        assert lease is not None
        result = await process(world.services, lease, outages=outages)
        assert result is not None
        assert result.attempts == 0
        assert result.delay_time is not None
        waits.append((result.delay_time - world.clock.now()).total_seconds())
        assert outages.remaining(State.CONVERT) > 0
        assert outages.remaining(State.RECOGNIZE) == 0
        world.clock.set(result.delay_time)
    assert waits == [1, 2, 4]
    lease = await acquire_next(world.services, State.CONVERT)
    assert lease is not None
    result = await process(world.services, lease, outages=outages)
    assert result is not None
    assert result.state is State.RECOGNIZE
    assert outages.remaining(State.CONVERT) == 0
