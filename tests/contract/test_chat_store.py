"""The chat store contract over the memory, SQLite and PostgreSQL adapters, and their own."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path

import pytest

from transcriber_adapters.memory import MemoryChatStore
from transcriber_adapters.postgres import Database, PostgresChatStore
from transcriber_adapters.sqlite import SqliteChatStore
from transcriber_contracts.chat_store import CHAT, LEASE, ChatStoreContract
from transcriber_core.clocks import ManualClock


class TestMemoryChatStore(ChatStoreContract):
    """The in-memory store keeps the chat store contract."""

    @pytest.fixture
    def chats(self, clock: ManualClock) -> MemoryChatStore:
        return MemoryChatStore(clock)


class TestSqliteChatStore(ChatStoreContract):
    """The SQLite store keeps the chat store contract on a real file."""

    @pytest.fixture
    async def chats(self, clock: ManualClock, tmp_path: Path) -> AsyncIterator[SqliteChatStore]:
        store = await SqliteChatStore.open(tmp_path / "jobs.db", clock=clock)
        yield store
        await store.close()


class TestPostgresChatStore(ChatStoreContract):
    """The PostgreSQL store keeps the chat store contract on a real database."""

    @pytest.fixture
    def chats(self, clock: ManualClock, pg_database: Database) -> PostgresChatStore:
        return PostgresChatStore(pg_database, clock=clock)


async def test_sqlite_settings_and_lease_are_shared_by_every_process(tmp_path: Path) -> None:
    """Settings one process saves and the lease it holds are seen by another on the file."""
    path = tmp_path / "jobs.db"
    one = await SqliteChatStore.open(path)
    other = await SqliteChatStore.open(path)
    try:
        await one.set_chat_language(CHAT, "en")
        assert (await other.chat_settings(CHAT)).language == "en"
        assert await one.take_poll_lease("one", lease=LEASE) is not None
        assert await other.take_poll_lease("other", lease=LEASE) is None
    finally:
        await one.close()
        await other.close()


async def test_postgres_lease_is_judged_by_the_database_clock(
    pg_database: Database, postgres_url: str
) -> None:
    """Two instances without an injected clock share the server's: a held lease holds for both."""
    other = await Database.open(postgres_url, pool_size=1)
    try:
        one, two = PostgresChatStore(pg_database), PostgresChatStore(other)
        held = await one.take_poll_lease("one", lease=timedelta(minutes=1))
        assert held is not None
        assert await two.take_poll_lease("two", lease=timedelta(minutes=1)) is None
        await one.release_poll_lease(held)
        assert await two.take_poll_lease("two", lease=timedelta(minutes=1)) is not None
    finally:
        await other.close()
