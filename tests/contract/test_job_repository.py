"""The job repository contract, run over the memory and SQLite adapters."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from transcriber_adapters.memory.jobs import MemoryJobRepository
from transcriber_adapters.sqlite import SqliteJobRepository
from transcriber_contracts.job_repository import (
    JobLifecycleContract,
    JobRepositoryContract,
    SuiteClock,
)


class TestMemoryJobRepository(JobRepositoryContract):
    """The in-memory repository keeps the contract."""

    @pytest.fixture
    async def repo(self) -> AsyncIterator[MemoryJobRepository]:
        repo = MemoryJobRepository()
        yield repo
        await repo.close()


class TestSqliteJobRepository(JobRepositoryContract):
    """The SQLite repository keeps the contract on a real file."""

    @pytest.fixture
    async def repo(self, tmp_path: Path) -> AsyncIterator[SqliteJobRepository]:
        repo = await SqliteJobRepository.open(tmp_path / "jobs.db")
        yield repo
        await repo.close()


class TestMemoryJobLifecycle(JobLifecycleContract):
    """The in-memory repository deletes and sweeps as the contract says."""

    @pytest.fixture
    async def clocked_repo(self, clock: SuiteClock) -> AsyncIterator[MemoryJobRepository]:
        repo = MemoryJobRepository(clock=clock)
        yield repo
        await repo.close()


class TestSqliteJobLifecycle(JobLifecycleContract):
    """The SQLite repository deletes and sweeps as the contract says, on its own clock."""

    @pytest.fixture
    async def clocked_repo(
        self, clock: SuiteClock, tmp_path: Path
    ) -> AsyncIterator[SqliteJobRepository]:
        repo = await SqliteJobRepository.open(tmp_path / "jobs.db", clock=clock)
        yield repo
        await repo.close()
