"""The job repository contract, outbox included, run over the memory and SQLite adapters."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from transcriber_adapters.memory.jobs import MemoryJobRepository
from transcriber_adapters.sqlite import SqliteJobRepository
from transcriber_contracts.job_repository import JobRepositoryContract
from transcriber_contracts.outbox import OutboxContract, SuiteClock


class TestMemoryJobRepository(JobRepositoryContract, OutboxContract):
    """The in-memory repository keeps the contract."""

    @pytest.fixture
    async def repo(self, clock: SuiteClock) -> AsyncIterator[MemoryJobRepository]:
        repo = MemoryJobRepository(clock=clock)
        yield repo
        await repo.close()

    @pytest.fixture
    def twin_repo(self, repo: MemoryJobRepository) -> MemoryJobRepository:
        return repo


class TestSqliteJobRepository(JobRepositoryContract, OutboxContract):
    """The SQLite repository keeps the contract on a real file."""

    @pytest.fixture
    async def repo(self, tmp_path: Path, clock: SuiteClock) -> AsyncIterator[SqliteJobRepository]:
        repo = await SqliteJobRepository.open(tmp_path / "jobs.db", clock=clock)
        yield repo
        await repo.close()

    @pytest.fixture
    async def twin_repo(
        self, repo: SqliteJobRepository, tmp_path: Path, clock: SuiteClock
    ) -> AsyncIterator[SqliteJobRepository]:
        twin = await SqliteJobRepository.open(tmp_path / "jobs.db", clock=clock)
        yield twin
        await twin.close()
