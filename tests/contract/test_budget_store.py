"""The budget store contract over the memory, SQLite and PostgreSQL adapters, and process races."""

from __future__ import annotations

import asyncio
import multiprocessing
from collections.abc import AsyncIterator
from concurrent.futures import ProcessPoolExecutor
from datetime import timedelta
from pathlib import Path

import pytest

from transcriber_adapters.memory import MemoryBudgetStore
from transcriber_adapters.postgres import Database, PostgresBudgetStore
from transcriber_adapters.sqlite import SqliteBudgetStore
from transcriber_contracts.budget_store import HOUR, T0, BudgetStoreContract, OpenAnother
from transcriber_core.budgets import burst_of
from transcriber_core.clocks import ManualClock
from transcriber_core.ports import BudgetStore


class TestMemoryBudgetStore(BudgetStoreContract):
    """The in-memory store keeps the budget store contract; others share its database object."""

    @pytest.fixture
    def budgets(self, clock: ManualClock) -> MemoryBudgetStore:
        return MemoryBudgetStore(clock)

    @pytest.fixture
    def another_budgets(self, budgets: MemoryBudgetStore) -> OpenAnother:
        async def another() -> BudgetStore:
            return MemoryBudgetStore(database=budgets.database)

        return another


class TestSqliteBudgetStore(BudgetStoreContract):
    """The SQLite store keeps the budget store contract on a real file, one connection each."""

    @pytest.fixture
    async def budgets(self, clock: ManualClock, tmp_path: Path) -> AsyncIterator[SqliteBudgetStore]:
        store = await SqliteBudgetStore.open(tmp_path / "jobs.db", clock=clock)
        yield store
        await store.close()

    @pytest.fixture
    async def another_budgets(
        self, budgets: SqliteBudgetStore, clock: ManualClock, tmp_path: Path
    ) -> AsyncIterator[OpenAnother]:
        opened: list[SqliteBudgetStore] = []

        async def another() -> BudgetStore:
            opened.append(await SqliteBudgetStore.open(tmp_path / "jobs.db", clock=clock))
            return opened[-1]

        yield another
        for store in opened:
            await store.close()


async def _take_many(path: Path, count: int) -> int:
    store = await SqliteBudgetStore.open(path, clock=ManualClock(T0))
    try:
        taken = 0
        for _ in range(count):
            if await store.take("starts", capacity=500, per=HOUR) is None:
                taken += 1
        return taken
    finally:
        await store.close()


def _process(path: Path, count: int) -> int:
    return asyncio.run(_take_many(path, count))


async def test_processes_racing_share_one_budget(tmp_path: Path) -> None:
    """Four processes taking at once from one file get the burst between them, never more."""
    path = tmp_path / "jobs.db"
    await (await SqliteBudgetStore.open(path)).close()
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(4, mp_context=context) as pool:
        loop = asyncio.get_running_loop()
        taken = await asyncio.gather(
            *(loop.run_in_executor(pool, _process, path, 40) for _ in range(4))
        )
    assert sum(taken) == burst_of(500)


async def test_memory_reset_forgets_everything() -> None:
    """``reset`` empties the store and its record of takes, so one fake serves many tests."""
    store = MemoryBudgetStore(ManualClock(T0))
    await store.take("b", capacity=5, per=HOUR)
    store.reset()
    assert store.takes == []
    assert await store.levels() == {}


class TestPostgresBudgetStore(BudgetStoreContract):
    """The PostgreSQL store keeps the budget store contract; others get pools of their own."""

    @pytest.fixture
    def budgets(self, clock: ManualClock, pg_database: Database) -> PostgresBudgetStore:
        return PostgresBudgetStore(pg_database, clock=clock)

    @pytest.fixture
    async def another_budgets(
        self, clock: ManualClock, postgres_url: str
    ) -> AsyncIterator[OpenAnother]:
        opened: list[Database] = []

        async def another() -> BudgetStore:
            opened.append(await Database.open(postgres_url, pool_size=2))
            return PostgresBudgetStore(opened[-1], clock=clock)

        yield another
        for database in opened:
            await database.close()


#: A budget that refills so slowly that no test run sees a token come back.
_YEAR = timedelta(days=365)


async def _take_many_postgres(url: str, count: int) -> int:
    database = await Database.open(url, pool_size=2)
    try:
        store = PostgresBudgetStore(database)
        taken = 0
        for _ in range(count):
            if await store.take("starts", capacity=500, per=_YEAR) is None:
                taken += 1
        return taken
    finally:
        await database.close()


def _postgres_process(url: str, count: int) -> int:
    return asyncio.run(_take_many_postgres(url, count))


async def test_postgres_processes_racing_share_one_budget(
    pg_database: Database, postgres_url: str
) -> None:
    """Four processes taking at once on the database's clock get the burst between them."""
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(4, mp_context=context) as pool:
        loop = asyncio.get_running_loop()
        taken = await asyncio.gather(
            *(loop.run_in_executor(pool, _postgres_process, postgres_url, 40) for _ in range(4))
        )
    assert sum(taken) == burst_of(500)


async def test_postgres_budget_refills_on_the_database_clock(pg_database: Database) -> None:
    """Without an injected clock the bucket's time is the server's: one just made reads full."""
    store = PostgresBudgetStore(pg_database)
    assert await store.take("sync", capacity=20, per=_YEAR) is None
    row = await pg_database.fetchone("SELECT statement_timestamp() - updated FROM budgets")
    assert row is not None
    (age,) = row
    assert timedelta(0) <= age
    assert await store.levels() == {"sync": pytest.approx(burst_of(20) - 1, abs=1e-3)}
