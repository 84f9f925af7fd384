"""The owner store contract over the memory, SQLite and PostgreSQL adapters, and their own."""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from transcriber_adapters.memory import MemoryOwnerStore
from transcriber_adapters.postgres import Database, PostgresOwnerStore
from transcriber_adapters.sqlite import (
    SqliteJobRepository,
    SqliteOwnerStore,
    connect,
    job_params,
    migrate,
    shipped_migrations,
)
from transcriber_contracts.job_repository import make_job
from transcriber_contracts.owner_store import (
    HASH,
    OTHER_HASH,
    T0,
    OpenAnother,
    OwnerStoreContract,
    session,
)
from transcriber_core.entities import LoginFailures
from transcriber_core.errors import Conflict
from transcriber_core.ports import OwnerStore


class TestMemoryOwnerStore(OwnerStoreContract):
    """The in-memory owner store keeps the owner store contract."""

    @pytest.fixture
    async def owners(self) -> AsyncIterator[MemoryOwnerStore]:
        store = MemoryOwnerStore()
        yield store
        await store.close()

    @pytest.fixture
    def another_owners(self, owners: MemoryOwnerStore) -> OpenAnother:
        async def another() -> OwnerStore:
            return MemoryOwnerStore(database=owners.database)

        return another


class TestSqliteOwnerStore(OwnerStoreContract):
    """The SQLite owner store keeps the owner store contract on a real file."""

    @pytest.fixture
    async def owners(self, tmp_path: Path) -> AsyncIterator[SqliteOwnerStore]:
        store = await SqliteOwnerStore.open(tmp_path / "jobs.db")
        yield store
        await store.close()

    @pytest.fixture
    async def another_owners(
        self, owners: SqliteOwnerStore, tmp_path: Path
    ) -> AsyncIterator[OpenAnother]:
        opened: list[SqliteOwnerStore] = []

        async def another() -> OwnerStore:
            opened.append(await SqliteOwnerStore.open(tmp_path / "jobs.db"))
            return opened[-1]

        yield another
        for store in opened:
            await store.close()


async def test_memory_reset_forgets_owner_sessions_and_failures() -> None:
    """``reset`` empties the owner, sessions and failures, so one fake serves many tests."""
    store = MemoryOwnerStore()
    await store.create_owner(HASH, now=T0)
    await store.create_session(session(1))
    await store.save_login_failures(LoginFailures(client="c", count=1, last=T0), previous=None)
    store.reset()
    assert await store.get_owner_hash() is None
    assert await store.get_session(session(1).id_hash) is None
    assert await store.get_login_failures("c") is None


async def test_sqlite_owner_and_sessions_survive_reopening(tmp_path: Path) -> None:
    """The owner and its sessions outlive the process: a restart keeps the owner logged in."""
    path = tmp_path / "jobs.db"
    first = await SqliteOwnerStore.open(path)
    await first.create_owner(HASH, now=T0)
    await first.create_session(session(1))
    await first.close()
    second = await SqliteOwnerStore.open(path)
    try:
        assert await second.get_owner_hash() == HASH
        assert await second.get_session(session(1).id_hash) == session(1)
        assert await second.create_owner(OTHER_HASH, now=T0) is False
    finally:
        await second.close()


async def test_sqlite_owner_table_refuses_a_second_row(tmp_path: Path) -> None:
    """The schema itself holds one owner at most, whatever SQL a hand edit runs."""
    path = tmp_path / "jobs.db"
    store = await SqliteOwnerStore.open(path)
    await store.close()
    conn = connect(path)
    try:
        conn.execute("INSERT INTO owner (id, password_hash, created) VALUES (1, 'a', 0)")
        with pytest.raises(sqlite3.IntegrityError):
            conn.execute("INSERT INTO owner (id, password_hash, created) VALUES (2, 'b', 0)")
    finally:
        conn.close()


async def test_sqlite_upgrade_from_0001_keeps_jobs(tmp_path: Path) -> None:
    """A database made before the owner tables gets them on open, with its jobs untouched."""
    path = tmp_path / "jobs.db"
    job = make_job()
    conn = connect(path)
    try:
        migrate(conn, now=T0, migrations=[m for m in shipped_migrations() if m.version == 1])
        # The columns 0001 made: later migrations add their own.
        made = {row[1] for row in conn.execute("PRAGMA table_info(jobs)")}
        params = {column: value for column, value in job_params(job).items() if column in made}
        columns = ", ".join(params)
        values = ", ".join(f":{column}" for column in params)
        conn.execute(f"INSERT INTO jobs ({columns}) VALUES ({values})", params)
    finally:
        conn.close()
    store = await SqliteJobRepository.open(path)
    owners = await SqliteOwnerStore.open(path)
    try:
        assert store.applied_migrations[:2] == (2, 3)
        assert await store.get(job.id) == job
        assert await owners.get_owner_hash() is None
        assert await owners.create_owner(HASH, now=T0) is True
    finally:
        await owners.close()
        await store.close()


async def test_sqlite_upgrade_from_0002_keeps_the_owner_and_drops_the_signing_key(
    tmp_path: Path,
) -> None:
    """0003 keeps the owner's hash, adds sessions, and deletes the old cookie-signing key."""
    path = tmp_path / "jobs.db"
    conn = connect(path)
    try:
        migrate(conn, now=T0, migrations=[m for m in shipped_migrations() if m.version <= 2])
        conn.execute("INSERT INTO owner (id, password_hash, created) VALUES (1, ?, 0)", (HASH,))
        conn.execute("INSERT INTO secrets (name, value, created) VALUES ('session', x'00', 0)")
    finally:
        conn.close()
    owners = await SqliteOwnerStore.open(path)
    try:
        assert await owners.get_owner_hash() == HASH
        await owners.create_session(session(1))
        assert await owners.get_session(session(1).id_hash) == session(1)
    finally:
        await owners.close()
    conn = connect(path)
    try:
        tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master")}
    finally:
        conn.close()
    assert "secrets" not in tables
    assert {"admin_sessions", "login_failures"} <= tables


class TestPostgresOwnerStore(OwnerStoreContract):
    """The PostgreSQL owner store keeps the owner store contract; others get pools of their own."""

    @pytest.fixture
    def owners(self, pg_database: Database) -> PostgresOwnerStore:
        return PostgresOwnerStore(pg_database)

    @pytest.fixture
    async def another_owners(self, postgres_url: str) -> AsyncIterator[OpenAnother]:
        opened: list[Database] = []

        async def another() -> OwnerStore:
            opened.append(await Database.open(postgres_url, pool_size=2))
            return PostgresOwnerStore(opened[-1])

        yield another
        for database in opened:
            await database.close()


async def test_postgres_owner_table_refuses_a_second_row(pg_database: Database) -> None:
    """The schema itself holds one owner at most, whatever SQL a hand edit runs."""
    await pg_database.execute(
        "INSERT INTO owner (id, password_hash, created) VALUES (1, 'a', now())"
    )
    with pytest.raises(Conflict):
        await pg_database.execute(
            "INSERT INTO owner (id, password_hash, created) VALUES (2, 'b', now())"
        )
