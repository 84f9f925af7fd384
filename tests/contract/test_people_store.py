"""The people store contract over the memory, SQLite and PostgreSQL adapters."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path

import pytest

from transcriber_adapters.memory import MemoryPeopleStore
from transcriber_adapters.postgres import Database, PostgresPeopleStore
from transcriber_adapters.sqlite import SqlitePeopleStore
from transcriber_contracts.people_store import HASH, OpenPeople, PeopleStoreContract, person
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
