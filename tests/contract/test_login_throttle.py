"""The login throttle contract over the memory, SQLite and PostgreSQL adapters."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from transcriber_adapters.memory import MemoryLoginThrottle
from transcriber_adapters.postgres import Database, PostgresLoginThrottle
from transcriber_adapters.sqlite import SqliteLoginThrottle
from transcriber_contracts.login_throttle import T0, LoginThrottleContract, OpenAnother
from transcriber_core.entities import LoginFailures
from transcriber_core.ports import LoginThrottle


class TestMemoryLoginThrottle(LoginThrottleContract):
    """The in-memory throttle keeps the login throttle contract."""

    @pytest.fixture
    async def logins(self) -> AsyncIterator[MemoryLoginThrottle]:
        store = MemoryLoginThrottle()
        yield store
        await store.close()

    @pytest.fixture
    def another_logins(self, logins: MemoryLoginThrottle) -> OpenAnother:
        async def another() -> LoginThrottle:
            return MemoryLoginThrottle(database=logins.database)

        return another


class TestSqliteLoginThrottle(LoginThrottleContract):
    """The SQLite throttle keeps the login throttle contract on a real file."""

    @pytest.fixture
    async def logins(self, tmp_path: Path) -> AsyncIterator[SqliteLoginThrottle]:
        store = await SqliteLoginThrottle.open(tmp_path / "jobs.db")
        yield store
        await store.close()

    @pytest.fixture
    async def another_logins(
        self, logins: SqliteLoginThrottle, tmp_path: Path
    ) -> AsyncIterator[OpenAnother]:
        opened: list[SqliteLoginThrottle] = []

        async def another() -> LoginThrottle:
            opened.append(await SqliteLoginThrottle.open(tmp_path / "jobs.db"))
            return opened[-1]

        yield another
        for store in opened:
            await store.close()


class TestPostgresLoginThrottle(LoginThrottleContract):
    """The PostgreSQL throttle keeps the contract; others get pools of their own."""

    @pytest.fixture
    def logins(self, pg_database: Database) -> PostgresLoginThrottle:
        return PostgresLoginThrottle(pg_database)

    @pytest.fixture
    async def another_logins(self, postgres_url: str) -> AsyncIterator[OpenAnother]:
        opened: list[Database] = []

        async def another() -> LoginThrottle:
            opened.append(await Database.open(postgres_url, pool_size=2))
            return PostgresLoginThrottle(opened[-1])

        yield another
        for database in opened:
            await database.close()


async def test_memory_reset_forgets_failures() -> None:
    """``reset`` empties the failures and the record of calls, so one fake serves many tests."""
    store = MemoryLoginThrottle()
    await store.save_login_failures(LoginFailures(client="c", count=1, last=T0), previous=None)
    store.reset()
    assert store.calls == []
    assert await store.get_login_failures("c") is None
