"""``PostgresChatStore``: the Telegram poller's lease and each chat's settings, on the database.

The lease is judged by the database's clock (``clock.NOW_SQL``), the one
every host shares: two API hosts whose clocks disagree still agree on when
the holder's lease ran out (ADR 53).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta
from typing import Any, LiteralString

from transcriber_adapters.postgres.clock import NOW_SQL, now_param
from transcriber_adapters.postgres.connection import Database
from transcriber_core.entities import ChatMode, ChatSettings, PollLease
from transcriber_core.ports import Clock

#: Take the lease unless another holds it unexpired. One statement: a taker that finds
#: the row waits for its holder's commit and re-tests the WHERE, so one of processes
#: asking at once gets a row back and the rest none (no second check).
_TAKE = (
    "INSERT INTO telegram_poll_lease (name, holder, fence, expires)"
    f" VALUES ('poller', %(holder)s, 1, {NOW_SQL} + %(lease)s::interval)"
    " ON CONFLICT (name) DO UPDATE SET holder = excluded.holder,"
    " fence = telegram_poll_lease.fence + 1, expires = excluded.expires"
    f" WHERE telegram_poll_lease.expires <= {NOW_SQL}"
    " RETURNING fence"
)
_RENEW = (
    f"UPDATE telegram_poll_lease SET expires = {NOW_SQL} + %(lease)s::interval"
    " WHERE name = 'poller' AND holder = %(holder)s AND fence = %(fence)s"
)
_RELEASE = (
    f"UPDATE telegram_poll_lease SET expires = {NOW_SQL}"
    " WHERE name = 'poller' AND holder = %(holder)s AND fence = %(fence)s"
)
_GET = "SELECT language, mode, summary FROM telegram_chats WHERE chat_id = %(chat_id)s"
#: Set one setting, inserting the chat with the defaults for the other; the row after.
_SET_LANGUAGE = (
    "INSERT INTO telegram_chats (chat_id, language, mode, updated)"
    f" VALUES (%(chat_id)s, %(value)s, 'auto', {NOW_SQL})"
    " ON CONFLICT (chat_id) DO UPDATE SET language = excluded.language,"
    " updated = excluded.updated RETURNING language, mode, summary"
)
_SET_MODE = (
    "INSERT INTO telegram_chats (chat_id, language, mode, updated)"
    f" VALUES (%(chat_id)s, NULL, %(value)s, {NOW_SQL})"
    " ON CONFLICT (chat_id) DO UPDATE SET mode = excluded.mode,"
    " updated = excluded.updated RETURNING language, mode, summary"
)
_SET_SUMMARY = (
    "INSERT INTO telegram_chats (chat_id, language, mode, summary, updated)"
    f" VALUES (%(chat_id)s, NULL, 'auto', %(value)s, {NOW_SQL})"
    " ON CONFLICT (chat_id) DO UPDATE SET summary = excluded.summary,"
    " updated = excluded.updated RETURNING language, mode, summary"
)


class PostgresChatStore:
    """The Telegram intake's rows on a shared ``Database``."""

    def __init__(self, database: Database, *, clock: Clock | None = None) -> None:
        """Use ``database``'s pool; times from ``clock`` when given, else the database's own."""
        self._db = database
        self._clock = clock

    async def take_poll_lease(self, holder: str, *, lease: timedelta) -> PollLease | None:
        """Hold the polling lease for ``lease`` from now; None while another holds it."""
        params = {"holder": holder, "lease": lease, "now": now_param(self._clock)}
        row = await self._db.fetchone(_TAKE, params)
        return None if row is None else PollLease(holder=holder, fence=row[0])

    async def renew_poll_lease(self, held: PollLease, *, lease: timedelta) -> bool:
        """Hold ``held`` ``lease`` longer; False when another took it since."""
        params = {
            "holder": held.holder,
            "fence": held.fence,
            "lease": lease,
            "now": now_param(self._clock),
        }
        return await self._db.execute(_RENEW, params) == 1

    async def release_poll_lease(self, held: PollLease) -> None:
        """Let ``held`` go at once, if it still holds."""
        params = {"holder": held.holder, "fence": held.fence, "now": now_param(self._clock)}
        await self._db.execute(_RELEASE, params)

    async def chat_settings(self, chat_id: int) -> ChatSettings:
        """The chat's settings, or the defaults."""
        row = await self._db.fetchone(_GET, {"chat_id": chat_id})
        return ChatSettings(chat_id=chat_id) if row is None else _settings(chat_id, row)

    async def set_chat_language(self, chat_id: int, language: str | None) -> ChatSettings:
        """Keep the chat's language, its mode untouched; the settings now."""
        return await self._set(_SET_LANGUAGE, chat_id, language)

    async def set_chat_mode(self, chat_id: int, mode: ChatMode) -> ChatSettings:
        """Keep the chat's mode, its language untouched; the settings now."""
        return await self._set(_SET_MODE, chat_id, mode.value)

    async def set_chat_summary(self, chat_id: int, summary: bool | None) -> ChatSettings:
        """Keep the chat's summary choice (None: the service's), the rest untouched."""
        return await self._set(_SET_SUMMARY, chat_id, summary)

    async def _set(
        self, sql: LiteralString, chat_id: int, value: str | bool | None
    ) -> ChatSettings:
        params = {"chat_id": chat_id, "value": value, "now": now_param(self._clock)}
        row = await self._db.fetchone(sql, params)
        if row is None:  # an upsert always returns its row
            raise AssertionError("the settings upsert returned no row")
        return _settings(chat_id, row)


def _settings(chat_id: int, row: Sequence[Any]) -> ChatSettings:
    language, mode, summary = row
    return ChatSettings(
        chat_id=chat_id,
        language=language,
        mode=ChatMode(mode),
        summary=None if summary is None else bool(summary),
    )
