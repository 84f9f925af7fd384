"""``SqliteChatStore``: the Telegram poller's lease and each chat's settings, in the job database.

Times are the store's clock (ADR 30): every process on one SQLite file is on
one host, so they share it.
"""

from __future__ import annotations

import sqlite3
from datetime import timedelta

from transcriber_adapters.sqlite.connection import SqliteStore
from transcriber_adapters.sqlite.times import to_db
from transcriber_core.entities import ChatMode, ChatSettings, PollLease
from transcriber_core.ports import Clock

#: Take the lease unless another holds it unexpired; one statement, so of processes
#: asking at once one writes the row and the others change nothing (no second check).
_TAKE_SQL = (
    "INSERT INTO telegram_poll_lease (name, holder, fence, expires)"
    " VALUES ('poller', :holder, 1, :expires)"
    " ON CONFLICT (name) DO UPDATE SET holder = excluded.holder,"
    " fence = telegram_poll_lease.fence + 1, expires = excluded.expires"
    " WHERE telegram_poll_lease.expires <= :now"
    " RETURNING fence"
)
_RENEW_SQL = (
    "UPDATE telegram_poll_lease SET expires = :expires"
    " WHERE name = 'poller' AND holder = :holder AND fence = :fence"
)
_RELEASE_SQL = (
    "UPDATE telegram_poll_lease SET expires = :now"
    " WHERE name = 'poller' AND holder = :holder AND fence = :fence"
)
_GET_SQL = "SELECT language, mode, summary FROM telegram_chats WHERE chat_id = ?"
#: Set one setting, inserting the chat with the defaults for the other; the row after.
_SET_LANGUAGE_SQL = (
    "INSERT INTO telegram_chats (chat_id, language, mode, updated) VALUES (?, ?, 'auto', ?)"
    " ON CONFLICT (chat_id) DO UPDATE SET language = excluded.language,"
    " updated = excluded.updated RETURNING language, mode, summary"
)
_SET_MODE_SQL = (
    "INSERT INTO telegram_chats (chat_id, language, mode, updated) VALUES (?, NULL, ?, ?)"
    " ON CONFLICT (chat_id) DO UPDATE SET mode = excluded.mode,"
    " updated = excluded.updated RETURNING language, mode, summary"
)
_SET_SUMMARY_SQL = (
    "INSERT INTO telegram_chats (chat_id, language, mode, summary, updated)"
    " VALUES (?, NULL, 'auto', ?, ?)"
    " ON CONFLICT (chat_id) DO UPDATE SET summary = excluded.summary,"
    " updated = excluded.updated RETURNING language, mode, summary"
)


class SqliteChatStore(SqliteStore):
    """The Telegram intake's rows; open with ``await open(path)`` or share a ``SqliteDatabase``."""

    _what = "the chat store"

    async def take_poll_lease(self, holder: str, *, lease: timedelta) -> PollLease | None:
        """Hold the polling lease for ``lease`` from now; None while another holds it."""
        return await self._call(_take, holder, lease, self._clock)

    async def renew_poll_lease(self, held: PollLease, *, lease: timedelta) -> bool:
        """Hold ``held`` ``lease`` longer; False when another took it since."""
        return await self._call(_renew, held, lease, self._clock)

    async def release_poll_lease(self, held: PollLease) -> None:
        """Let ``held`` go at once, if it still holds."""
        await self._call(_release, held, self._clock)

    async def chat_settings(self, chat_id: int) -> ChatSettings:
        """The chat's settings, or the defaults."""
        return await self._call(_get, chat_id)

    async def set_chat_language(self, chat_id: int, language: str | None) -> ChatSettings:
        """Keep the chat's language, its mode untouched; the settings now."""
        return await self._call(_set, _SET_LANGUAGE_SQL, chat_id, language, self._clock)

    async def set_chat_mode(self, chat_id: int, mode: ChatMode) -> ChatSettings:
        """Keep the chat's mode, its language untouched; the settings now."""
        return await self._call(_set, _SET_MODE_SQL, chat_id, mode.value, self._clock)

    async def set_chat_summary(self, chat_id: int, summary: bool | None) -> ChatSettings:
        """Keep the chat's summary choice (None: the service's), the rest untouched."""
        value = None if summary is None else int(summary)
        return await self._call(_set, _SET_SUMMARY_SQL, chat_id, value, self._clock)


def _take(
    conn: sqlite3.Connection, holder: str, lease: timedelta, clock: Clock
) -> PollLease | None:
    now = clock.now()
    params = {"holder": holder, "expires": to_db(now + lease), "now": to_db(now)}
    row = conn.execute(_TAKE_SQL, params).fetchone()
    return None if row is None else PollLease(holder=holder, fence=row[0])


def _renew(conn: sqlite3.Connection, held: PollLease, lease: timedelta, clock: Clock) -> bool:
    params = {"holder": held.holder, "fence": held.fence, "expires": to_db(clock.now() + lease)}
    return conn.execute(_RENEW_SQL, params).rowcount == 1


def _release(conn: sqlite3.Connection, held: PollLease, clock: Clock) -> None:
    params = {"holder": held.holder, "fence": held.fence, "now": to_db(clock.now())}
    conn.execute(_RELEASE_SQL, params)


def _get(conn: sqlite3.Connection, chat_id: int) -> ChatSettings:
    row = conn.execute(_GET_SQL, (chat_id,)).fetchone()
    return ChatSettings(chat_id=chat_id) if row is None else _settings(chat_id, row)


def _set(
    conn: sqlite3.Connection, sql: str, chat_id: int, value: str | int | None, clock: Clock
) -> ChatSettings:
    return _settings(chat_id, conn.execute(sql, (chat_id, value, to_db(clock.now()))).fetchone())


def _settings(chat_id: int, row: tuple[str | None, str, int | None]) -> ChatSettings:
    language, mode, summary = row
    return ChatSettings(
        chat_id=chat_id,
        language=language,
        mode=ChatMode(mode),
        summary=None if summary is None else bool(summary),
    )
