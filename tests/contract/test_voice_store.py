"""The voice store contract over the memory, SQLite and PostgreSQL adapters."""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest

from transcriber_adapters.memory import MemoryVoiceStore
from transcriber_adapters.postgres import Database, PostgresVoiceStore
from transcriber_adapters.sqlite import SqliteVoiceStore
from transcriber_contracts.voice_store import (
    ALICE,
    TOKEN,
    OpenVoices,
    VoiceStoreContract,
    axis,
    voice,
)
from transcriber_core.clocks import ManualClock
from transcriber_core.ports import VoiceStore


async def _nothing() -> None:
    """Closing a memory store releases nothing."""


class TestMemoryVoiceStore(VoiceStoreContract):
    """The in-memory voice store keeps the contract; others share its database object."""

    @pytest.fixture
    def voices(self, clock: ManualClock) -> MemoryVoiceStore:
        return MemoryVoiceStore(clock)

    @pytest.fixture
    def open_voices(self, voices: MemoryVoiceStore) -> OpenVoices:
        async def another() -> tuple[VoiceStore, Callable[[], Awaitable[None]]]:
            return MemoryVoiceStore(database=voices.database), _nothing

        return another


class TestSqliteVoiceStore(VoiceStoreContract):
    """The SQLite voice store keeps the contract on a real file, one connection each."""

    @pytest.fixture
    async def voices(self, clock: ManualClock, tmp_path: Path) -> AsyncIterator[SqliteVoiceStore]:
        store = await SqliteVoiceStore.open(tmp_path / "jobs.db", clock=clock)
        yield store
        await store.close()

    @pytest.fixture
    def open_voices(
        self, voices: SqliteVoiceStore, clock: ManualClock, tmp_path: Path
    ) -> OpenVoices:
        async def another() -> tuple[VoiceStore, Callable[[], Awaitable[None]]]:
            store = await SqliteVoiceStore.open(tmp_path / "jobs.db", clock=clock)
            return store, store.close

        return another


class TestPostgresVoiceStore(VoiceStoreContract):
    """The PostgreSQL voice store keeps the contract; others get pools of their own."""

    @pytest.fixture
    def voices(self, pg_database: Database) -> PostgresVoiceStore:
        return PostgresVoiceStore(pg_database)

    @pytest.fixture
    def open_voices(self, voices: PostgresVoiceStore, postgres_url: str) -> OpenVoices:
        async def another() -> tuple[VoiceStore, Callable[[], Awaitable[None]]]:
            database = await Database.open(postgres_url, pool_size=2)
            return PostgresVoiceStore(database), database.close

        return another


def _sqlite_rows(path: Path) -> list[tuple[str, str, str]]:
    """Every voice row in the file as it is on disk: id, owner, print."""
    with sqlite3.connect(path) as conn:
        return conn.execute("SELECT id, owner, vector FROM voices").fetchall()


async def test_sqlite_deleted_voice_leaves_no_print_in_the_file(tmp_path: Path) -> None:
    """A deleted voice, and a forgotten owner's, leave no row and no print in the SQLite file."""
    store = await SqliteVoiceStore.open(tmp_path / "jobs.db")
    try:
        await store.add_voice(voice("v1"), axis(0))
        await store.add_voice(voice("v2", minutes=1), axis(1))
        await store.add_voice(voice("v3", TOKEN), axis(2))
        assert len(_sqlite_rows(tmp_path / "jobs.db")) == 3
        await store.delete_voice(ALICE, "v1")
        await store.forget_owner(TOKEN)
        assert [row[0] for row in _sqlite_rows(tmp_path / "jobs.db")] == ["v2"]
    finally:
        await store.close()


async def test_postgres_deleted_voice_leaves_no_print_in_the_table(pg_database: Database) -> None:
    """A deleted voice, and a forgotten owner's, leave no row and no print in PostgreSQL."""
    store = PostgresVoiceStore(pg_database)
    await store.add_voice(voice("v1"), axis(0))
    await store.add_voice(voice("v2", minutes=1), axis(1))
    await store.add_voice(voice("v3", TOKEN), axis(2))
    await store.delete_voice(ALICE, "v1")
    await store.forget_owner(TOKEN)
    rows = await pg_database.fetchall("SELECT id, vector FROM voices")
    assert [row[0] for row in rows] == ["v2"]


async def test_memory_reset_forgets_every_voice() -> None:
    """``reset`` empties the store, so one fake serves many tests."""
    store = MemoryVoiceStore()
    await store.add_voice(voice("v1"), axis(0))
    store.reset()
    assert await store.list_voices(ALICE) == []
