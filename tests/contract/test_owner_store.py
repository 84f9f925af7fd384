"""The owner store contract, run over the memory and SQLite adapters, plus SQLite's own checks."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from transcriber_adapters.memory.jobs import MemoryJobRepository
from transcriber_adapters.sqlite import (
    SqliteJobRepository,
    connect,
    job_params,
    migrate,
    shipped_migrations,
)
from transcriber_adapters.sqlite.statements import INSERT_JOB_SQL
from transcriber_contracts.job_repository import make_job
from transcriber_contracts.owner_store import HASH, OTHER_HASH, T0, OwnerStoreContract


class TestMemoryOwnerStore(OwnerStoreContract):
    """The in-memory repository keeps the owner store contract."""

    @pytest.fixture
    async def owners(self) -> AsyncIterator[MemoryJobRepository]:
        store = MemoryJobRepository()
        yield store
        await store.close()


class TestSqliteOwnerStore(OwnerStoreContract):
    """The SQLite repository keeps the owner store contract on a real file."""

    @pytest.fixture
    async def owners(self, tmp_path: Path) -> AsyncIterator[SqliteJobRepository]:
        store = await SqliteJobRepository.open(tmp_path / "jobs.db")
        yield store
        await store.close()


async def test_memory_reset_forgets_the_owner() -> None:
    """``reset`` empties the owner and secrets too, so one fake serves many tests."""
    store = MemoryJobRepository()
    await store.create_owner(HASH, now=T0)
    await store.get_or_create_secret("session", b"key", now=T0)
    store.reset()
    assert await store.get_owner_hash() is None
    assert await store.get_or_create_secret("session", b"new", now=T0) == b"new"


async def test_sqlite_owner_and_secret_survive_reopening(tmp_path: Path) -> None:
    """The owner and the session secret outlive the process: a restart keeps logins working."""
    path = tmp_path / "jobs.db"
    first = await SqliteJobRepository.open(path)
    await first.create_owner(HASH, now=T0)
    secret = await first.get_or_create_secret("session", b"k" * 32, now=T0)
    await first.close()
    second = await SqliteJobRepository.open(path)
    try:
        assert await second.get_owner_hash() == HASH
        assert await second.get_or_create_secret("session", b"other", now=T0) == secret
        assert await second.create_owner(OTHER_HASH, now=T0) is False
    finally:
        await second.close()


async def test_sqlite_setups_on_two_connections_have_one_winner(tmp_path: Path) -> None:
    """Two processes' connections racing to create the owner: the single statement lets one win."""
    path = tmp_path / "jobs.db"
    stores = [await SqliteJobRepository.open(path) for _ in range(4)]
    try:
        hashes = [f"{HASH}-{n}" for n in range(len(stores))]
        results = await asyncio.gather(
            *(store.create_owner(h, now=T0) for store, h in zip(stores, hashes, strict=True))
        )
        assert results.count(True) == 1
        assert await stores[0].get_owner_hash() == hashes[results.index(True)]
    finally:
        for store in stores:
            await store.close()


async def test_sqlite_owner_table_refuses_a_second_row(tmp_path: Path) -> None:
    """The schema itself holds one owner at most, whatever SQL a hand edit runs."""
    path = tmp_path / "jobs.db"
    store = await SqliteJobRepository.open(path)
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
        conn.execute(INSERT_JOB_SQL, job_params(job))
    finally:
        conn.close()
    store = await SqliteJobRepository.open(path)
    try:
        assert store.applied_migrations == (2,)
        assert await store.get(job.id) == job
        assert await store.get_owner_hash() is None
        assert await store.create_owner(HASH, now=T0) is True
    finally:
        await store.close()
