"""The condition store contract over the memory, SQLite and PostgreSQL adapters, and their own."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path

import pytest

from transcriber_adapters.memory import MemoryConditionStore
from transcriber_adapters.postgres import Database, PostgresConditionStore
from transcriber_adapters.sqlite import SqliteConditionStore, SqliteJobRepository
from transcriber_contracts.condition_store import DAY, HERE, HOST, ConditionStoreContract
from transcriber_core.clocks import ManualClock


class TestMemoryConditionStore(ConditionStoreContract):
    """The in-memory store keeps the condition store contract."""

    @pytest.fixture
    def conditions(self, clock: ManualClock) -> MemoryConditionStore:
        return MemoryConditionStore(clock)


class TestSqliteConditionStore(ConditionStoreContract):
    """The SQLite store keeps the condition store contract on a real file."""

    @pytest.fixture
    async def conditions(
        self, clock: ManualClock, tmp_path: Path
    ) -> AsyncIterator[SqliteConditionStore]:
        store = await SqliteConditionStore.open(tmp_path / "jobs.db", clock=clock)
        yield store
        await store.close()


async def test_sqlite_conditions_are_seen_by_every_process(tmp_path: Path) -> None:
    """A condition one process notes is read by another on the same file (no per-process state)."""
    path = tmp_path / "jobs.db"
    repo = await SqliteJobRepository.open(path)
    writer = await SqliteConditionStore.open(path)
    reader = await SqliteConditionStore.open(path)
    try:
        await writer.report("disk_full", scope=HOST, message="m")
        (held,) = await reader.current(scopes=HERE, within=DAY)
        assert held.code == "disk_full"
        await reader.clear(frozenset({"disk_full"}), scopes=HERE)
        assert await writer.current(scopes=HERE, within=DAY) == []
    finally:
        for store in (writer, reader):
            await store.close()
        await repo.close()


def test_memory_reset_forgets_everything() -> None:
    """``reset`` empties the store and its record of reports, so one fake serves many tests."""
    store = MemoryConditionStore()
    store.reports.append(("disk_full", HOST))
    store.reset()
    assert store.reports == []


class TestPostgresConditionStore(ConditionStoreContract):
    """The PostgreSQL store keeps the condition store contract on a real database."""

    @pytest.fixture
    def conditions(self, clock: ManualClock, pg_database: Database) -> PostgresConditionStore:
        return PostgresConditionStore(pg_database, clock=clock)


async def test_postgres_conditions_are_seen_by_every_instance(
    pg_database: Database, postgres_url: str
) -> None:
    """A condition one process notes is read and cleared by another on its own pool."""
    other = await Database.open(postgres_url, pool_size=1)
    try:
        writer = PostgresConditionStore(pg_database)
        reader = PostgresConditionStore(other)
        await writer.report("disk_full", scope=HOST, message="m")
        (held,) = await reader.current(scopes=HERE, within=timedelta(minutes=1))
        assert held.code == "disk_full"
        await reader.clear(frozenset({"disk_full"}), scopes=HERE)
        assert await writer.current(scopes=HERE, within=timedelta(minutes=1)) == []
    finally:
        await other.close()


async def test_postgres_conditions_age_on_the_database_clock(pg_database: Database) -> None:
    """Without an injected clock, ``seen`` is the database's now: it ages by the server's time."""
    store = PostgresConditionStore(pg_database)
    await store.report("disk_full", scope=HOST, message="m")
    row = await pg_database.fetchone("SELECT statement_timestamp() - seen FROM service_conditions")
    assert row is not None
    (age,) = row
    assert await store.current(scopes=HERE, within=age + timedelta(minutes=1)) != []
    assert await store.current(scopes=HERE, within=age) == []
