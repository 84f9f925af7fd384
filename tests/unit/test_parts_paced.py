"""Parts under a spent start budget wait for their turn in the store, not in a loop (ADR 61).

The recognizer's start asks a budget store for a token named by the part's
audio, as SpeechKit's adapter does; the job repository and the budget store
are memory, SQLite on one real file, or PostgreSQL on one database. The part
loops are run by hand on a manual clock, as idle loops woken every poll
would run them.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import attrs
import pytest

from tests.support.delegate import Delegate
from tests.support.postgres import empty
from tests.support.world import World, make_world
from transcriber_adapters.memory import ManualClock, MemoryBudgetStore, MemoryJobRepository
from transcriber_adapters.postgres import Database, PostgresBudgetStore, PostgresJobRepository
from transcriber_adapters.sqlite import SqliteBudgetStore, SqliteJobRepository
from transcriber_core.entities import FileRecord, State
from transcriber_core.errors import BudgetSpent
from transcriber_core.naming import holder_of
from transcriber_core.policy import DecodeLimits
from transcriber_core.ports import BudgetStore, JobRepository, RecognizerLimits, Started
from transcriber_core.worker import acquire_next_part

#: SpeechKit's default start budget: a burst of 50, then one start in eight seconds.
STARTS: dict[str, Any] = {"capacity": 500, "per": timedelta(hours=1)}
REFILL = timedelta(seconds=8)
#: How often an idle part loop looks again: the poller's tick.
TICK = timedelta(seconds=1)


class PacedStarts(Delegate):
    """The memory recognizer behind a start budget, asked as SpeechKit's adapter asks it."""

    def __init__(self, inner: object, budgets: BudgetStore, *, named: bool = True) -> None:
        super().__init__(inner)
        self._budgets = budgets
        self._named = named
        #: Every ask of the budget: (holder, admitted).
        self.asks: list[tuple[str, bool]] = []

    async def start(self, audio: FileRecord, *, duration: float | None, **_: object) -> Started:
        holder = audio.id if self._named else None
        wait = await self._budgets.take("starts", **STARTS, holder=holder)
        self.asks.append((audio.id, wait is None))
        if wait is not None:
            raise BudgetSpent(retry_after=wait)
        started: Started = await self.inner.start(audio, duration=duration, **_)
        return started


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def kind(request: pytest.FixtureRequest) -> str:
    """Which stores the parts run on."""
    return str(request.param)


@pytest.fixture
async def pg(kind: str, request: pytest.FixtureRequest) -> AsyncIterator[Database | None]:
    """This run's PostgreSQL database, migrated and emptied, for the postgres kind only."""
    if kind != "postgres":
        yield None
        return
    database = await Database.open(request.getfixturevalue("postgres_url"), pool_size=4)
    try:
        await empty(database)
        yield database
    finally:
        await database.close()


@pytest.fixture
async def repo(
    pg: Database | None, kind: str, tmp_path: Path, clock: ManualClock
) -> AsyncIterator[JobRepository]:
    """The job repository the parts run on: in memory, SQLite on a file, or PostgreSQL."""
    repository: JobRepository
    if pg is not None:
        repository = PostgresJobRepository(pg, clock=clock)
    elif kind == "memory":
        repository = MemoryJobRepository(clock)
    else:
        repository = await SqliteJobRepository.open(tmp_path / "jobs.db", clock=clock)
    yield repository
    await repository.close()


@pytest.fixture
async def budgets(
    pg: Database | None, kind: str, repo: JobRepository, clock: ManualClock, tmp_path: Path
) -> AsyncIterator[BudgetStore]:
    """A start budget on the repository's database, its burst already spent."""
    store: BudgetStore
    closing: SqliteBudgetStore | None = None
    if pg is not None:
        store = PostgresBudgetStore(pg, clock=clock)
    elif kind == "memory":
        store = MemoryBudgetStore(clock)
    else:
        store = closing = await SqliteBudgetStore.open(tmp_path / "jobs.db", clock=clock)
    for _ in range(50):
        assert await store.take("starts", **STARTS) is None
    yield store
    if closing is not None:
        await closing.close()


NewWorld = Callable[[float], World]


@pytest.fixture
def new_world(
    tmp_path: Path, repo: JobRepository, clock: ManualClock, budgets: BudgetStore
) -> NewWorld:
    """A world whose recognizer takes 60 s at most and whose starts are paced by ``budgets``."""

    def make(seconds: float) -> World:
        world = make_world(tmp_path, repo=repo, clock=clock)
        world.converter.duration = seconds
        world.converter.limits = DecodeLimits(min_bytes_per_second=0.001)
        world.recognizer.limits = RecognizerLimits(max_seconds=60)
        world.services = attrs.evolve(
            world.services, recognizer=PacedStarts(world.recognizer, budgets)
        )
        return world

    return make


def asks_of(world: World) -> list[tuple[str, bool]]:
    """The budget asks the world's starts made."""
    recognizer = world.services.recognizer
    assert isinstance(recognizer, PacedStarts)
    return recognizer.asks


async def planned(world: World) -> str:
    """Submit a recording, convert it and plan its parts; the job's id."""
    job = await world.submit()
    await world.step(State.CONVERT)
    done = await world.step(State.RECOGNIZE)
    assert done is not None
    assert done.state is State.CHECK
    return job.id


async def run_parts(world: World) -> int:
    """Run every part that may be taken now, as idle part loops would; how many steps."""
    steps = 0
    while await world.step_part() is not None:
        steps += 1
    return steps


async def test_a_paced_part_waits_for_its_turn_and_is_taken_at_it(new_world: NewWorld) -> None:
    """Three parts on a spent budget: each due at its own refill, not taken a tick before it."""
    world = new_world(150.0)
    job_id = await planned(world)
    start = world.clock.now()
    assert await run_parts(world) == 3
    parts = await world.repo.get_parts(job_id)
    assert [part.delay_time for part in parts] == [start + REFILL * n for n in (1, 2, 3)]
    assert all(part.operation_id is None and part.attempts == 0 for part in parts)
    for n in (1, 2, 3):
        world.clock.set(start + REFILL * n - timedelta(milliseconds=1))
        assert await run_parts(world) == 0
        world.clock.set(start + REFILL * n)
        assert await run_parts(world) >= 1
        started = [part.operation_id is not None for part in await world.repo.get_parts(job_id)]
        assert started == [index < n for index in range(3)]
    # Each part asked the budget twice: told its turn once, admitted at it.
    assert sorted(admitted for _, admitted in asks_of(world)) == [False] * 3 + [True] * 3


async def run_for(world: World, span: timedelta) -> None:
    """Run the part loops and the check step every tick for ``span``, as idle workers would."""
    end = world.clock.now() + span
    while world.clock.now() < end:
        await run_parts(world)
        while await world.step(State.CHECK) is not None:
            pass
        world.clock.advance(TICK)


async def test_budget_asks_of_waiting_parts_are_bounded(new_world: NewWorld) -> None:
    """Twenty-odd parts waiting on a spent budget ask it at most twice each, and all get started."""
    world = new_world(1200.0)
    job_id = await planned(world)
    count = len(await world.repo.get_parts(job_id))
    assert count >= 20
    await run_for(world, REFILL * count + TICK * 2)
    parts = await world.repo.get_parts(job_id)
    assert all(part.operation_id is not None for part in parts)
    asks = asks_of(world)
    assert sum(admitted for _, admitted in asks) == count
    assert len(asks) <= 2 * count


async def test_a_later_job_is_not_starved_by_an_earlier_jobs_parts(new_world: NewWorld) -> None:
    """A job planned after another's ten parts took their turns starts after them, not never."""
    world = new_world(600.0)
    first = await planned(world)
    await run_parts(world)
    second = await planned(world)
    count = sum([len(await world.repo.get_parts(job_id)) for job_id in (first, second)])
    await run_for(world, REFILL * count + TICK * 2)
    for job_id in (first, second):
        parts = await world.repo.get_parts(job_id)
        assert all(part.operation_id is not None for part in parts), job_id
    # Every start was admitted once, and no part asked more than twice.
    asks = asks_of(world)
    assert sum(admitted for _, admitted in asks) == count
    assert len(asks) <= 2 * count


async def test_a_part_lease_names_the_worker_that_holds_it(new_world: NewWorld) -> None:
    """The acquisition id of a part begins with its taker (host:process), read back by holder_of."""
    world = new_world(150.0)
    world.services = attrs.evolve(world.services, worker="worker-host-a:4242")
    await planned(world)
    lease = await acquire_next_part(world.services)
    assert lease is not None
    assert holder_of(lease.acquisition_id) == "worker-host-a:4242"
    assert lease.part.acquisition_id == lease.acquisition_id
    assert holder_of(None) is None
    assert holder_of("an-unnamed-lease") is None
