"""The summary store contract over the memory, SQLite and PostgreSQL adapters (ADR 83)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest

from transcriber_adapters.memory import MemoryJobRepository, MemorySummaryStore
from transcriber_adapters.postgres import Database, PostgresJobRepository, PostgresSummaryStore
from transcriber_adapters.sqlite import SqliteDatabase, SqliteJobRepository, SqliteSummaryStore
from transcriber_contracts.repository_support import T0
from transcriber_contracts.summary_store import (
    OpenSummaries,
    Stores,
    SummaryStoreContract,
    done_job,
)
from transcriber_core.clocks import ManualClock
from transcriber_core.ports import SummaryStore


async def _nothing() -> None:
    """Closing a memory store releases nothing."""


class TestMemorySummaryStore(SummaryStoreContract):
    """The in-memory summary store keeps the contract; others share its database object."""

    @pytest.fixture
    def stores(self, clock: ManualClock) -> Stores:
        repo = MemoryJobRepository(clock)
        return MemorySummaryStore(database=repo.database), repo

    @pytest.fixture
    def open_summaries(self, stores: Stores) -> OpenSummaries:
        store = stores[0]
        assert isinstance(store, MemorySummaryStore)

        async def another() -> tuple[SummaryStore, Callable[[], Awaitable[None]]]:
            return MemorySummaryStore(database=store.database), _nothing

        return another


class TestSqliteSummaryStore(SummaryStoreContract):
    """The SQLite summary store keeps the contract on a real file, one connection each."""

    @pytest.fixture
    async def stores(self, clock: ManualClock, tmp_path: Path) -> AsyncIterator[Stores]:
        database = await SqliteDatabase.open(tmp_path / "jobs.db", clock=clock)
        yield SqliteSummaryStore(database, clock=clock), SqliteJobRepository(database, clock=clock)
        await database.close()

    @pytest.fixture
    def open_summaries(self, stores: Stores, clock: ManualClock, tmp_path: Path) -> OpenSummaries:
        async def another() -> tuple[SummaryStore, Callable[[], Awaitable[None]]]:
            store = await SqliteSummaryStore.open(tmp_path / "jobs.db", clock=clock)
            return store, store.close

        return another


class TestPostgresSummaryStore(SummaryStoreContract):
    """The PostgreSQL summary store keeps the contract; others get pools of their own."""

    @pytest.fixture
    def stores(self, clock: ManualClock, pg_database: Database) -> Stores:
        return (
            PostgresSummaryStore(pg_database, clock=clock),
            PostgresJobRepository(pg_database, clock=clock),
        )

    @pytest.fixture
    def open_summaries(
        self, stores: Stores, clock: ManualClock, postgres_url: str
    ) -> OpenSummaries:
        async def another() -> tuple[SummaryStore, Callable[[], Awaitable[None]]]:
            database = await Database.open(postgres_url, pool_size=1)
            return PostgresSummaryStore(database, clock=clock), database.close

        return another


async def test_memory_reset_forgets_every_summary() -> None:
    """``reset`` empties the store, so one fake serves many tests."""
    repo = MemoryJobRepository(ManualClock(T0))
    store = MemorySummaryStore(database=repo.database)
    job, _ = await repo.create(done_job())
    await store.request_summary(job.id)
    store.reset()
    assert await store.get_summary(job.id) is None
