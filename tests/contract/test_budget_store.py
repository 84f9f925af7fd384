"""The budget store contract over the memory, SQLite and PostgreSQL adapters, and process races."""

from __future__ import annotations

import asyncio
import multiprocessing
from collections.abc import AsyncIterator
from concurrent.futures import ProcessPoolExecutor
from datetime import timedelta
from pathlib import Path

import pytest

from tests.support.postgres import NowPassingBudgets
from transcriber_adapters.memory import MemoryBudgetStore
from transcriber_adapters.postgres import Database, PostgresBudgetStore
from transcriber_adapters.sqlite import SqliteBudgetStore
from transcriber_contracts.budget_store import HOUR, T0, BudgetStoreContract
from transcriber_core.budgets import burst_of


class TestMemoryBudgetStore(BudgetStoreContract):
    """The in-memory store keeps the budget store contract."""

    @pytest.fixture
    def budgets(self) -> MemoryBudgetStore:
        return MemoryBudgetStore()


class TestSqliteBudgetStore(BudgetStoreContract):
    """The SQLite store keeps the budget store contract on a real file."""

    @pytest.fixture
    async def budgets(self, tmp_path: Path) -> AsyncIterator[SqliteBudgetStore]:
        store = await SqliteBudgetStore.open(tmp_path / "jobs.db")
        yield store
        await store.close()


async def _take_many(path: Path, count: int) -> int:
    store = await SqliteBudgetStore.open(path)
    try:
        taken = 0
        for _ in range(count):
            if await store.take("starts", capacity=500, per=HOUR, now=T0) is None:
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


async def test_stores_on_one_file_in_one_process_share_the_budget(tmp_path: Path) -> None:
    """Two stores (two connections, two threads) racing in one process share one budget."""
    path = tmp_path / "jobs.db"
    first = await SqliteBudgetStore.open(path)
    second = await SqliteBudgetStore.open(path)
    try:
        results = await asyncio.gather(
            *(
                store.take("sync", capacity=20, per=HOUR, now=T0)
                for _ in range(10)
                for store in (first, second)
            )
        )
    finally:
        await first.close()
        await second.close()
    assert sum(result is None for result in results) == burst_of(20)


async def test_memory_reset_forgets_everything() -> None:
    """``reset`` empties the store and its record of takes, so one fake serves many tests."""
    store = MemoryBudgetStore()
    await store.take("b", capacity=5, per=HOUR, now=T0)
    store.reset()
    assert store.takes == []
    assert await store.levels(now=T0) == {}


class TestPostgresBudgetStore(BudgetStoreContract):
    """The PostgreSQL store keeps the budget store contract on a real database."""

    @pytest.fixture
    def budgets(self, pg_database: Database) -> NowPassingBudgets:
        return NowPassingBudgets(pg_database)


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


async def test_postgres_instances_in_one_process_share_the_budget(
    pg_database: Database, postgres_url: str
) -> None:
    """Two stores on two pools racing in one process share one budget."""
    other = await Database.open(postgres_url, pool_size=4)
    stores = (PostgresBudgetStore(pg_database), PostgresBudgetStore(other))
    try:
        results = await asyncio.gather(
            *(store.take("sync", capacity=20, per=_YEAR) for _ in range(10) for store in stores)
        )
    finally:
        await other.close()
    assert sum(result is None for result in results) == burst_of(20)


async def test_postgres_budget_refills_on_the_database_clock(pg_database: Database) -> None:
    """Without an injected clock the bucket's time is the server's: one just made reads full."""
    store = PostgresBudgetStore(pg_database)
    assert await store.take("sync", capacity=20, per=_YEAR) is None
    row = await pg_database.fetchone("SELECT statement_timestamp() - updated FROM budgets")
    assert row is not None
    (age,) = row
    assert timedelta(0) <= age
    assert await store.levels() == {"sync": pytest.approx(burst_of(20) - 1, abs=1e-3)}
