"""The job repository, outbox and lifecycle contracts over memory, SQLite and PostgreSQL."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

from transcriber_adapters.memory.jobs import MemoryJobRepository
from transcriber_adapters.postgres import Database, PostgresJobRepository
from transcriber_adapters.sqlite import SqliteJobRepository
from transcriber_contracts.corrections import CorrectionsContract
from transcriber_contracts.job_repository import (
    JobLifecycleContract,
    JobRepositoryContract,
    OpenAnother,
)
from transcriber_contracts.outbox import OutboxContract
from transcriber_contracts.parts import ElsewhereOpener, PartsContract
from transcriber_contracts.titles import TitlesContract
from transcriber_core.clocks import ManualClock
from transcriber_core.ports import JobRepository


class JobRepositorySuites(
    JobRepositoryContract,
    OutboxContract,
    JobLifecycleContract,
    PartsContract,
    CorrectionsContract,
    TitlesContract,
):
    """Every role suite of a job repository: each adapter's class below provides the fixtures."""


class TestMemoryJobRepository(JobRepositorySuites):
    """The in-memory repository keeps the contract; a second one shares its database object."""

    @pytest.fixture
    async def repo(self, clock: ManualClock) -> AsyncIterator[MemoryJobRepository]:
        repo = MemoryJobRepository(clock)
        yield repo
        await repo.close()

    @pytest.fixture
    def another_repo(self, repo: MemoryJobRepository) -> OpenAnother:
        async def another() -> JobRepository:
            return MemoryJobRepository(database=repo.database)

        return another

    @pytest.fixture
    def open_elsewhere(self, repo: MemoryJobRepository) -> ElsewhereOpener:
        @asynccontextmanager
        async def opened() -> AsyncIterator[JobRepository]:
            yield MemoryJobRepository(database=repo.database)

        return opened


class TestSqliteJobRepository(JobRepositorySuites):
    """The SQLite repository keeps the contract on a real file; another is its own connection."""

    @pytest.fixture
    async def repo(self, clock: ManualClock, tmp_path: Path) -> AsyncIterator[SqliteJobRepository]:
        repo = await SqliteJobRepository.open(tmp_path / "jobs.db", clock=clock)
        yield repo
        await repo.close()

    @pytest.fixture
    async def another_repo(
        self, repo: SqliteJobRepository, clock: ManualClock, tmp_path: Path
    ) -> AsyncIterator[OpenAnother]:
        opened: list[SqliteJobRepository] = []

        async def another() -> JobRepository:
            opened.append(await SqliteJobRepository.open(tmp_path / "jobs.db", clock=clock))
            return opened[-1]

        yield another
        for other in opened:
            await other.close()

    @pytest.fixture
    def open_elsewhere(
        self, repo: SqliteJobRepository, clock: ManualClock, tmp_path: Path
    ) -> ElsewhereOpener:
        @asynccontextmanager
        async def opened() -> AsyncIterator[JobRepository]:
            other = await SqliteJobRepository.open(tmp_path / "jobs.db", clock=clock)
            try:
                yield other
            finally:
                await other.close()

        return opened


class TestPostgresJobRepository(JobRepositorySuites):
    """The PostgreSQL repository keeps the contract; another is on a pool of its own."""

    @pytest.fixture
    def repo(self, clock: ManualClock, pg_database: Database) -> PostgresJobRepository:
        return PostgresJobRepository(pg_database, clock=clock)

    @pytest.fixture
    async def another_repo(
        self, clock: ManualClock, postgres_url: str
    ) -> AsyncIterator[OpenAnother]:
        opened: list[Database] = []

        async def another() -> JobRepository:
            opened.append(await Database.open(postgres_url, pool_size=2))
            return PostgresJobRepository(opened[-1], clock=clock)

        yield another
        for database in opened:
            await database.close()

    @pytest.fixture
    def open_elsewhere(
        self, repo: PostgresJobRepository, clock: ManualClock, postgres_url: str
    ) -> ElsewhereOpener:
        @asynccontextmanager
        async def opened() -> AsyncIterator[JobRepository]:
            database = await Database.open(postgres_url, pool_size=1)
            try:
                yield PostgresJobRepository(database, clock=clock)
            finally:
                await database.close()

        return opened
