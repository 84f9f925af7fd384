"""The usage store contract over the memory, SQLite and PostgreSQL adapters."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest

from transcriber_adapters.memory import MemoryUsageStore
from transcriber_adapters.postgres import Database, PostgresUsageStore
from transcriber_adapters.sqlite import SqliteUsageStore
from transcriber_contracts.usage_store import T0, OpenUsage, UsageStoreContract, charge
from transcriber_core.clocks import ManualClock
from transcriber_core.ports import UsageStore


async def _nothing() -> None:
    """Closing a memory store releases nothing."""


class TestMemoryUsageStore(UsageStoreContract):
    """The in-memory usage store keeps the contract; others share its database object."""

    @pytest.fixture
    def usage(self, clock: ManualClock) -> MemoryUsageStore:
        return MemoryUsageStore(clock)

    @pytest.fixture
    def open_usage(self, usage: MemoryUsageStore) -> OpenUsage:
        async def another() -> tuple[UsageStore, Callable[[], Awaitable[None]]]:
            return MemoryUsageStore(database=usage.database), _nothing

        return another


class TestSqliteUsageStore(UsageStoreContract):
    """The SQLite usage store keeps the contract on a real file, one connection each."""

    @pytest.fixture
    async def usage(self, clock: ManualClock, tmp_path: Path) -> AsyncIterator[SqliteUsageStore]:
        store = await SqliteUsageStore.open(tmp_path / "jobs.db", clock=clock)
        yield store
        await store.close()

    @pytest.fixture
    def open_usage(self, usage: SqliteUsageStore, clock: ManualClock, tmp_path: Path) -> OpenUsage:
        async def another() -> tuple[UsageStore, Callable[[], Awaitable[None]]]:
            store = await SqliteUsageStore.open(tmp_path / "jobs.db", clock=clock)
            return store, store.close

        return another


class TestPostgresUsageStore(UsageStoreContract):
    """The PostgreSQL usage store keeps the contract; others get pools of their own."""

    @pytest.fixture
    def usage(self, clock: ManualClock, pg_database: Database) -> PostgresUsageStore:
        return PostgresUsageStore(pg_database, clock=clock)

    @pytest.fixture
    def open_usage(
        self, usage: PostgresUsageStore, clock: ManualClock, postgres_url: str
    ) -> OpenUsage:
        async def another() -> tuple[UsageStore, Callable[[], Awaitable[None]]]:
            database = await Database.open(postgres_url, pool_size=2)
            return PostgresUsageStore(database, clock=clock), database.close

        return another


async def test_memory_reset_forgets_everything() -> None:
    """``reset`` empties the charges and the record of them, so one fake serves many tests."""
    store = MemoryUsageStore(ManualClock(T0))
    await store.charge(charge("j1", 10), limit=0)
    assert store.charges == [("j1", True)]
    store.reset()
    assert store.charges == []
    assert (await store.usage(["person:a"]))["person:a"].today == 0
