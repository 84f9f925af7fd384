"""``SqliteConditionStore``: the service's own faults in the job database, seen by every process.

It has its own connection and thread, so ``/health`` never waits behind the
workers' queue traffic on the repository's connection, and a condition
written by one process is read by all that share the file.
"""

from __future__ import annotations

import sqlite3
from datetime import timedelta
from typing import TypeVar

from transcriber_adapters.sqlite.connection import SqliteStore
from transcriber_adapters.sqlite.times import from_db, to_db
from transcriber_core.entities import Condition
from transcriber_core.ports import Clock

T = TypeVar("T")

#: Insert a condition, or move its ``seen`` (and message) while keeping ``since``.
REPORT_SQL = (
    "INSERT INTO service_conditions (code, scope, message, since, seen) VALUES (?, ?, ?, ?, ?) "
    "ON CONFLICT (code, scope) DO UPDATE SET message = excluded.message, seen = excluded.seen"
)
_CURRENT_SQL = (
    "SELECT code, scope, message, since, seen FROM service_conditions "
    "WHERE scope IN ({scopes}) AND seen > ? ORDER BY code, scope"
)
_ANY_SQL = (
    "SELECT EXISTS (SELECT 1 FROM service_conditions"
    " WHERE code IN ({codes}) AND scope IN ({scopes}))"
)
_CLEAR_SQL = "DELETE FROM service_conditions WHERE code IN ({codes}) AND scope IN ({scopes})"


class SqliteConditionStore(SqliteStore):
    """Conditions in the ``service_conditions`` table; open with ``await open(path)``."""

    _what = "the condition store"

    async def report(self, code: str, *, scope: str, message: str) -> None:
        """Note that ``code`` holds in ``scope`` now; the first ``since`` is kept."""
        await self._call(_report, (code, scope, message), self._clock)

    async def clear(self, codes: frozenset[str], *, scopes: frozenset[str]) -> None:
        """Forget ``codes`` in each of ``scopes``; a read first: the usual no-op takes no lock."""
        if codes and scopes:
            await self._call(_clear, tuple(sorted(codes)), tuple(sorted(scopes)))

    async def current(self, *, scopes: frozenset[str], within: timedelta) -> list[Condition]:
        """Conditions in ``scopes`` last seen less than ``within`` ago, by code then scope."""
        if not scopes:
            return []
        return await self._call(_current, tuple(sorted(scopes)), self._clock, within)


def _marks(count: int) -> str:
    return ", ".join("?" * count)


def _report(conn: sqlite3.Connection, fields: tuple[str, str, str], clock: Clock) -> None:
    moment = to_db(clock.now())
    conn.execute(REPORT_SQL, (*fields, moment, moment))


def _clear(conn: sqlite3.Connection, codes: tuple[str, ...], scopes: tuple[str, ...]) -> None:
    marks = {"codes": _marks(len(codes)), "scopes": _marks(len(scopes))}
    # Every finished step calls this; nearly always nothing holds, and a read
    # takes no write lock away from the queue.
    (held,) = conn.execute(_ANY_SQL.format(**marks), codes + scopes).fetchone()
    if held:
        conn.execute(_CLEAR_SQL.format(**marks), codes + scopes)


def _current(
    conn: sqlite3.Connection, scopes: tuple[str, ...], clock: Clock, within: timedelta
) -> list[Condition]:
    seen_after = to_db(clock.now() - within)
    rows = conn.execute(_CURRENT_SQL.format(scopes=_marks(len(scopes))), (*scopes, seen_after))
    return [
        Condition(code=code, scope=scope, message=message, since=from_db(since), seen=from_db(seen))
        for code, scope, message, since, seen in rows
    ]
