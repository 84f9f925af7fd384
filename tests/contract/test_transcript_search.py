"""The transcript search contract over memory, SQLite (FTS5) and PostgreSQL (``tsvector``)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from transcriber_adapters.memory.jobs import MemoryJobRepository
from transcriber_adapters.postgres import Database, PostgresJobRepository
from transcriber_adapters.sqlite import SqliteJobRepository
from transcriber_contracts.search import SearchContract
from transcriber_core.clocks import ManualClock


class TestMemorySearch(SearchContract):
    """The store in memory scans with the core's rule."""

    @pytest.fixture
    async def repo(self, clock: ManualClock) -> AsyncIterator[MemoryJobRepository]:
        repo = MemoryJobRepository(clock)
        yield repo
        await repo.close()


class TestSqliteSearch(SearchContract):
    """SQLite finds candidates with its FTS5 table, kept in step by triggers."""

    @pytest.fixture
    async def repo(self, clock: ManualClock, tmp_path: Path) -> AsyncIterator[SqliteJobRepository]:
        repo = await SqliteJobRepository.open(tmp_path / "jobs.db", clock=clock)
        yield repo
        await repo.close()


class TestPostgresSearch(SearchContract):
    """PostgreSQL finds candidates with its generated ``tsvector`` and GIN index."""

    @pytest.fixture
    def repo(self, clock: ManualClock, pg_database: Database) -> PostgresJobRepository:
        return PostgresJobRepository(pg_database, clock=clock)
