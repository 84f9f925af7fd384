"""The condition store contract over the memory and SQLite adapters, plus SQLite's own checks."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from transcriber_adapters.memory import MemoryConditionStore
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
