"""The PostgreSQL job repository beyond the contract: wake-ups sent, the database's clock, races.

The contract suite (tests/contract/test_job_repository.py) checks what every
repository does; these check what only this one does: ``pg_notify`` at
commit whenever work becomes ready, "now" read from the server, and 16
processes acquiring jobs, or parts, at once on pools of their own.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import secrets
from collections.abc import AsyncIterator
from concurrent.futures import ProcessPoolExecutor
from datetime import timedelta
from threading import Barrier

import attrs
import psycopg
import pytest

from transcriber_adapters.postgres import WAKEUP_CHANNEL, Database, PostgresJobRepository
from transcriber_contracts.job_repository import LEASE, T0, make_job
from transcriber_contracts.parts import split_job
from transcriber_core.clocks import ManualClock
from transcriber_core.entities import State
from transcriber_core.errors import LeaseLost
from transcriber_core.transitions import Actor, transition

#: Sent after the writes under test: every wake-up they sent arrives before it.
_MARKER = "marker"


class Listener:
    """A LISTEN connection of its own, as another process's wake-up feed would have."""

    def __init__(self, conn: psycopg.AsyncConnection[object]) -> None:
        self._conn = conn
        #: Where to open another connection to the same database.
        self.dsn = conn.info.dsn

    async def heard(self) -> list[str]:
        """The payloads heard until a marker this call sends; wake-ups commit in order."""
        async with await psycopg.AsyncConnection.connect(
            self._conn.info.dsn, autocommit=True
        ) as other:
            await other.execute("SELECT pg_notify(%s, %s)", (WAKEUP_CHANNEL, _MARKER))
        payloads: list[str] = []
        async with asyncio.timeout(10):
            async for notify in self._conn.notifies():
                if notify.payload == _MARKER:
                    return payloads
                payloads.append(notify.payload)
        raise AssertionError("the notifies stream ended")  # pragma: no cover


@pytest.fixture
async def listener(pg_database: Database, postgres_url: str) -> AsyncIterator[Listener]:
    """A connection listening on the wake-up channel of this run's (emptied) database."""
    async with await psycopg.AsyncConnection.connect(postgres_url, autocommit=True) as conn:
        await conn.execute(f"LISTEN {WAKEUP_CHANNEL}")
        yield Listener(conn)


@pytest.fixture
def repo(pg_database: Database) -> PostgresJobRepository:
    """A repository on the database's own clock, as in service."""
    return PostgresJobRepository(pg_database)


async def test_a_created_job_wakes_its_step(
    repo: PostgresJobRepository, listener: Listener
) -> None:
    """Creating a job in a step state sends its state on the channel; a duplicate sends nothing."""
    job = make_job(dedup_key="k-" + secrets.token_hex(4))
    await repo.create(job)
    await repo.create(attrs.evolve(job, id="other-" + secrets.token_hex(4)))
    assert await listener.heard() == ["convert"]


async def test_a_created_terminal_or_delayed_job_wakes_nobody(
    repo: PostgresJobRepository, listener: Listener
) -> None:
    """A job created done, or with a delay still to run, is no work now: no wake-up."""
    far = make_job().created + timedelta(days=3650)
    await repo.create(make_job(state=State.DONE, text="hi"))
    await repo.create(make_job(delay_time=far))
    assert await listener.heard() == []


async def test_a_save_into_the_next_step_wakes_it(
    repo: PostgresJobRepository, listener: Listener
) -> None:
    """A held job saved into ``recognize`` with no delay wakes the recognize step at commit."""
    await repo.create(make_job())
    held = await repo.acquire(State.CONVERT, acquisition_id="a", lease=LEASE)
    assert held is not None
    assert await listener.heard() == ["convert"]
    converted = transition(held, State.RECOGNIZE, now=held.updated, converted_file_id="c")
    await repo.save_if_held(converted, acquisition_id="a")
    assert await listener.heard() == ["recognize"]


async def test_a_delayed_held_or_refused_save_wakes_nobody(
    repo: PostgresJobRepository, listener: Listener
) -> None:
    """A retry with a delay, a save that keeps the lease, and a fenced-off save send nothing."""
    await repo.create(make_job())
    await repo.create(make_job())
    first = await repo.acquire(State.CONVERT, acquisition_id="a", lease=LEASE)
    second = await repo.acquire(State.CONVERT, acquisition_id="b", lease=LEASE)
    assert first is not None
    assert second is not None
    await listener.heard()
    retry = transition(first, State.CONVERT, now=first.updated, error="busy")
    await repo.save_if_held(retry, acquisition_id="a", delay=timedelta(minutes=5))
    await repo.save_if_held(attrs.evolve(second, duration=1.5), acquisition_id="b")
    moved = transition(second, State.RECOGNIZE, now=second.updated)
    with pytest.raises(LeaseLost):
        await repo.save_if_held(moved, acquisition_id="not-the-holder")
    assert await listener.heard() == []


async def test_an_owner_revival_wakes_the_step(
    repo: PostgresJobRepository, listener: Listener
) -> None:
    """An owner's edit that puts a dead job back into ``convert`` wakes that step."""
    dead, _ = await repo.create(make_job(state=State.DEAD, error="gave up"))
    await listener.heard()
    revived = transition(dead, State.CONVERT, now=dead.updated, actor=Actor.OWNER)
    await repo.save_if_unchanged(revived, seen=dead)
    assert await listener.heard() == ["convert"]


async def test_wakeups_asked_while_one_is_in_flight_share_the_next(
    postgres_url: str, listener: Listener
) -> None:
    """Writes that commit while a wake-up of their step is in flight share the next one."""
    database = await Database.open(postgres_url, pool_size=1)
    sender = PostgresJobRepository(database).wakeups
    try:
        async with database.connection():  # the only connection: the first wake-up waits
            first = asyncio.create_task(sender.wake(State.CONVERT))
            # Two turns of the loop: the ask starts its sending task, which takes the ask
            # on and waits for the connection.
            await asyncio.sleep(0)
            await asyncio.sleep(0)
            assert sender._covered[State.CONVERT] == 1
            for _ in range(4):
                await sender.wake(State.CONVERT)  # returns at once: one is in flight
        await first
        await sender.flush()
    finally:
        await database.close()
    # The first, then one for the four that asked while it was in flight.
    assert sender.sent[State.CONVERT] == 2
    assert await listener.heard() == ["convert", "convert"]


async def test_a_wakeup_after_a_write_is_sent_after_it_commits(
    repo: PostgresJobRepository, listener: Listener
) -> None:
    """A listener woken by a create finds the job: the wake-up went out once it had committed."""
    async with await psycopg.AsyncConnection.connect(listener.dsn, autocommit=True) as other:
        await other.execute(f"LISTEN {WAKEUP_CHANNEL}")
        job, _ = await repo.create(make_job())
        notify = await anext(aiter(other.notifies()))
        assert notify.payload == "convert"
        row = await (await other.execute("SELECT id FROM jobs")).fetchone()
    assert row == (job.id,)


async def test_a_wakeup_that_cannot_be_sent_does_not_fail_the_write(
    postgres_url: str,
) -> None:
    """The write committed: a database gone before its wake-up raises nothing; the poll finds it."""
    database = await Database.open(postgres_url, pool_size=1)
    repo = PostgresJobRepository(database)
    await database.close()
    await repo.wakeups.wake(State.RECOGNIZE)
    assert repo.wakeups.sent[State.RECOGNIZE] == 0


async def test_times_are_the_database_clock(
    repo: PostgresJobRepository, pg_database: Database
) -> None:
    """Without an injected clock, created, acquire and delay times are the server's own."""
    job, _ = await repo.create(make_job())
    held = await repo.acquire(State.CONVERT, acquisition_id="a", lease=LEASE)
    assert held is not None
    await repo.save_if_held(held, acquisition_id="a", delay=timedelta(hours=1))
    row = await pg_database.fetchone(
        "SELECT statement_timestamp() - created, statement_timestamp() - acquire_time,"
        " delay_time - statement_timestamp(), created FROM jobs"
    )
    assert row is not None
    since_created, since_acquired, delay_left, created = row
    assert timedelta(0) <= since_acquired <= since_created < timedelta(minutes=1)
    assert timedelta(minutes=59) < delay_left <= timedelta(hours=1)
    assert job.created == created
    assert await repo.acquire(State.CONVERT, acquisition_id="b", lease=LEASE) is None


# -- 16 processes racing -----------------------------------------------------------------

#: Processes acquiring at once, and jobs per process per round.
_RACERS = 16
_ROUNDS = 200


async def _acquire_all(url: str, name: str, rounds: int, start: Barrier) -> list[str]:
    """Acquire ``rounds`` times once every racer is connected; the ids this racer got."""
    database = await Database.open(url, pool_size=1)
    try:
        repo = PostgresJobRepository(database)
        await asyncio.to_thread(start.wait)
        got: list[str] = []
        for n in range(rounds):
            job = await repo.acquire(State.CONVERT, acquisition_id=f"{name}-{n}", lease=LEASE)
            if job is not None:
                got.append(job.id)
        return got
    finally:
        await database.close()


def _racer(url: str, name: str, rounds: int, start: Barrier) -> list[str]:
    return asyncio.run(_acquire_all(url, name, rounds, start))


async def test_sixteen_processes_never_share_a_job(
    repo: PostgresJobRepository, postgres_url: str
) -> None:
    """16 processes, each on its own pool, acquire hundreds of times; no job goes out twice."""
    jobs = _RACERS * _ROUNDS // 2
    for _ in range(jobs):
        await repo.create(make_job())
    context = multiprocessing.get_context("spawn")
    with context.Manager() as manager, ProcessPoolExecutor(_RACERS, mp_context=context) as pool:
        # Every racer holds its connection before the first acquire: all 16 really race.
        start = manager.Barrier(_RACERS)
        loop = asyncio.get_running_loop()
        results = await asyncio.gather(
            *(
                loop.run_in_executor(pool, _racer, postgres_url, f"r{i}", _ROUNDS, start)
                for i in range(_RACERS)
            )
        )
    taken = [job_id for got in results for job_id in got]
    assert len(taken) == len(set(taken)) == jobs
    assert sum(1 for got in results if got) > _RACERS // 2


async def _take_parts(url: str, name: str, start: Barrier) -> list[tuple[str, int]]:
    """Take parts until none is left, once every racer is connected; the parts this one got."""
    database = await Database.open(url, pool_size=1)
    try:
        repo = PostgresJobRepository(database)
        await asyncio.to_thread(start.wait)
        got: list[tuple[str, int]] = []
        while part := await repo.acquire_part(acquisition_id=f"{name}-{len(got)}", lease=LEASE):
            got.append((part.job_id, part.index))
        return got
    finally:
        await database.close()


def _part_racer(url: str, name: str, start: Barrier) -> list[tuple[str, int]]:
    return asyncio.run(_take_parts(url, name, start))


async def test_sixteen_processes_never_share_a_part(
    repo: PostgresJobRepository, postgres_url: str
) -> None:
    """16 processes drain the parts of 20 split jobs at once (ADR 52): each part goes out once."""
    clock = ManualClock(T0)
    planned: list[tuple[str, int]] = []
    for _ in range(20):
        job, parts = await split_job(clock, repo, 8)
        planned.extend((job.id, part.index) for part in parts)
    context = multiprocessing.get_context("spawn")
    with context.Manager() as manager, ProcessPoolExecutor(_RACERS, mp_context=context) as pool:
        start = manager.Barrier(_RACERS)
        loop = asyncio.get_running_loop()
        results = await asyncio.gather(
            *(
                loop.run_in_executor(pool, _part_racer, postgres_url, f"p{i}", start)
                for i in range(_RACERS)
            )
        )
    taken = [key for got in results for key in got]
    assert sorted(taken) == sorted(planned)
    assert sum(1 for got in results if got) > _RACERS // 2
