"""Fixtures shared by the unit tests of the pipeline."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from transcriber_adapters.memory import ManualClock, MemoryJobRepository
from transcriber_adapters.sqlite import SqliteJobRepository
from transcriber_core.ports import JobRepository


@pytest.fixture
def clock() -> ManualClock:
    """The pipeline's clock, which is also its repository's: the test moves it."""
    return ManualClock()


@pytest.fixture(params=["memory", "sqlite"])
async def repo(
    request: pytest.FixtureRequest, tmp_path: Path, clock: ManualClock
) -> AsyncIterator[JobRepository]:
    """The job repository the pipeline runs on: in memory, or SQLite on a real file."""
    repository: JobRepository
    if request.param == "memory":
        repository = MemoryJobRepository(clock)
    else:
        repository = await SqliteJobRepository.open(tmp_path / "jobs.db", clock=clock)
    yield repository
    await repository.close()
