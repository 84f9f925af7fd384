"""The people store contract over the memory, SQLite and PostgreSQL adapters."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path

import pytest

from transcriber_adapters.memory import MemoryPeopleStore
from transcriber_adapters.postgres import Database, PostgresPeopleStore
from transcriber_adapters.sqlite import (
    SqliteJobRepository,
    SqlitePeopleStore,
    connect,
    job_params,
    migrate,
    shipped_migrations,
)
from transcriber_contracts.job_repository import make_job
from transcriber_contracts.people_store import HASH, T0, OpenPeople, PeopleStoreContract, person
from transcriber_core.clocks import ManualClock
from transcriber_core.ports import PeopleStore


class TestMemoryPeopleStore(PeopleStoreContract):
    """The in-memory people store keeps the contract; others share its database object."""

    @pytest.fixture
    def people(self, clock: ManualClock) -> MemoryPeopleStore:
        return MemoryPeopleStore(clock)

    @pytest.fixture
    def open_people(self, people: MemoryPeopleStore) -> OpenPeople:
        async def another() -> PeopleStore:
            return MemoryPeopleStore(database=people.database)

        return another


class TestSqlitePeopleStore(PeopleStoreContract):
    """The SQLite people store keeps the contract on a real file, one connection each."""

    @pytest.fixture
    async def people(self, clock: ManualClock, tmp_path: Path) -> AsyncIterator[SqlitePeopleStore]:
        store = await SqlitePeopleStore.open(tmp_path / "jobs.db", clock=clock)
        yield store
        await store.close()

    @pytest.fixture
    def open_people(
        self, people: SqlitePeopleStore, clock: ManualClock, tmp_path: Path
    ) -> OpenPeople:
        async def another() -> PeopleStore:
            return await SqlitePeopleStore.open(tmp_path / "jobs.db", clock=clock)

        return another


class TestPostgresPeopleStore(PeopleStoreContract):
    """The PostgreSQL people store keeps the contract; others get pools of their own."""

    @pytest.fixture
    def people(self, clock: ManualClock, pg_database: Database) -> PostgresPeopleStore:
        return PostgresPeopleStore(pg_database, clock=clock)

    @pytest.fixture
    def open_people(
        self, people: PostgresPeopleStore, clock: ManualClock, postgres_url: str
    ) -> OpenPeople:
        async def another() -> PeopleStore:
            return await PostgresPeopleStore.open(postgres_url, clock=clock)

        return another


async def test_memory_reset_forgets_everything() -> None:
    """``reset`` empties people, invites, tokens, sessions and the record of calls."""
    store = MemoryPeopleStore()
    await store.invite(person(1), token_hash="h", lifetime=timedelta(days=1))
    store.reset()
    assert store.calls == []
    assert await store.list_people() == []
    assert await store.accept_invite("h", password_hash=HASH) is None


async def test_postgres_invite_expires_on_the_database_clock(pg_database: Database) -> None:
    """Without an injected clock an invite's expiry is the server's now plus its lifetime."""
    store = PostgresPeopleStore(pg_database)
    invite = await store.invite(person(1), token_hash="h", lifetime=timedelta(hours=1))
    row = await pg_database.fetchone("SELECT statement_timestamp()")
    assert row is not None
    assert timedelta(minutes=59) < invite.expires - row[0] <= timedelta(hours=1)


async def test_sqlite_upgrade_to_0018_keeps_jobs_and_adds_people(tmp_path: Path) -> None:
    """A database made before the people tables gets them on open, with its jobs untouched."""
    path = tmp_path / "jobs.db"
    job = make_job(owner="a" * 64)
    conn = connect(path)
    try:
        migrate(conn, now=T0, migrations=[m for m in shipped_migrations() if m.version < 18])
        made = {row[1] for row in conn.execute("PRAGMA table_info(jobs)")}
        params = {column: value for column, value in job_params(job).items() if column in made}
        columns = ", ".join(params)
        values = ", ".join(f":{column}" for column in params)
        conn.execute(f"INSERT INTO jobs ({columns}) VALUES ({values})", params)
    finally:
        conn.close()
    people = await SqlitePeopleStore.open(path)
    jobs = await SqliteJobRepository.open(path)
    try:
        assert 18 in people.applied_migrations
        assert (await jobs.get(job.id)).owner == job.owner
        await people.invite(person(1), token_hash="h", lifetime=timedelta(days=1))
        assert await people.list_people() == [person(1)]
    finally:
        await jobs.close()
        await people.close()
