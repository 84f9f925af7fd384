"""A chat's summary choice gains "never chose" on upgrade (SQLite 0035, PostgreSQL 0026, ADR 92).

Before, 0 stood both for a chat that never chose and one that said
``/summary off``, and it behaved as never chosen (``[llm] auto_summary``
decided); after the upgrade such a chat reads as never chosen (None), a
chat that said ``/summary auto`` keeps it, and ``off`` can be kept as off.
"""

from __future__ import annotations

from pathlib import Path

from tests.support.postgres import PostgresServer
from transcriber_adapters.postgres import Database, PostgresChatStore
from transcriber_adapters.postgres import shipped_migrations as pg_migrations
from transcriber_adapters.sqlite import SqliteChatStore, connect, migrate, shipped_migrations
from transcriber_contracts.people_store import T0
from transcriber_core.entities import ChatMode, ChatSettings


async def test_sqlite_0035_reads_old_zero_as_never_chosen_and_keeps_the_rest(
    tmp_path: Path,
) -> None:
    """Rows from 0034 keep language, mode and auto; their 0 becomes None; off is then kept."""
    path = tmp_path / "jobs.db"
    conn = connect(path)
    try:
        migrate(conn, now=T0, migrations=[m for m in shipped_migrations() if m.version < 35])
        conn.executemany(
            "INSERT INTO telegram_chats (chat_id, language, mode, summary, updated)"
            " VALUES (?, ?, ?, ?, 5)",
            [(1, "ru", "command", 1), (2, None, "auto", 0)],
        )
    finally:
        conn.close()
    chats = await SqliteChatStore.open(path)
    try:
        assert 35 in chats.applied_migrations
        assert await chats.chat_settings(1) == ChatSettings(
            chat_id=1, language="ru", mode=ChatMode.COMMAND, summary=True
        )
        assert await chats.chat_settings(2) == ChatSettings(chat_id=2, summary=None)
        assert (await chats.set_chat_summary(2, False)).summary is False
    finally:
        await chats.close()
    conn = connect(path)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    finally:
        conn.close()


async def test_postgres_0026_reads_old_false_as_never_chosen(postgres: PostgresServer) -> None:
    """PostgreSQL's 0026 turns an old false into None and keeps true, as SQLite's 0035."""
    url = postgres.create_database()
    old = await Database.open(url, migrations=[m for m in pg_migrations() if m.version < 26])
    try:
        for chat_id, summary in ((1, True), (2, False)):
            await old.execute(
                "INSERT INTO telegram_chats (chat_id, mode, summary, updated)"
                " VALUES (%(chat)s, 'auto', %(summary)s, %(t)s)",
                {"chat": chat_id, "summary": summary, "t": T0},
            )
    finally:
        await old.close()
    database = await Database.open(url)
    try:
        assert 26 in database.applied_migrations
        chats = PostgresChatStore(database)
        assert (await chats.chat_settings(1)).summary is True
        assert (await chats.chat_settings(2)).summary is None
        assert (await chats.set_chat_summary(2, False)).summary is False
    finally:
        await database.close()
