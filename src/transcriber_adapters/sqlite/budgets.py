"""``SqliteBudgetStore``: request budgets in the job database, shared by every process (ADR 29).

Each ``take`` reads and writes the budget's row in one ``BEGIN IMMEDIATE``
transaction, so processes on the same file never both spend the last token,
and a named take reads and writes its holder's turn (``budget_turns``, ADR
61) in the same transaction. It has its own connection and thread, like the
condition store.
"""

from __future__ import annotations

import functools
import sqlite3
from datetime import datetime, timedelta

from transcriber_adapters.sqlite.connection import SqliteStore
from transcriber_adapters.sqlite.times import from_db, to_db
from transcriber_core.budgets import Bucket, level, take_token, take_turn, turns_forgotten_before
from transcriber_core.ports import Clock

_MICROSECOND = timedelta(microseconds=1)
_READ_SQL = "SELECT tokens, updated FROM budgets WHERE name = ?"
_WRITE_SQL = (
    "INSERT INTO budgets (name, capacity, per, tokens, updated) VALUES (?, ?, ?, ?, ?) "
    "ON CONFLICT (name) DO UPDATE SET capacity = excluded.capacity, per = excluded.per,"
    " tokens = excluded.tokens, updated = excluded.updated"
)
_ALL_SQL = "SELECT name, capacity, per, tokens, updated FROM budgets ORDER BY name"
_FORGET_TURNS_SQL = "DELETE FROM budget_turns WHERE name = ? AND due < ?"
_READ_TURN_SQL = "SELECT due FROM budget_turns WHERE name = ? AND holder = ?"
_WRITE_TURN_SQL = (
    "INSERT INTO budget_turns (name, holder, due) VALUES (?, ?, ?) "
    "ON CONFLICT (name, holder) DO UPDATE SET due = excluded.due"
)
_DROP_TURN_SQL = "DELETE FROM budget_turns WHERE name = ? AND holder = ?"


class SqliteBudgetStore(SqliteStore):
    """Token buckets in the ``budgets`` table; open with ``await open(path, clock=...)``."""

    _what = "the budget store"

    async def take(
        self, name: str, *, capacity: int, per: timedelta, holder: str | None = None
    ) -> timedelta | None:
        """Take a token of ``name`` or say how long until one is back; one write transaction."""
        # Checked here, not in the thread: a bad shape is the caller's error, not the database's.
        take_token(None, capacity=capacity, per=per, now=self._clock.now())
        take = functools.partial(_take, capacity=capacity, per=per, holder=holder)
        return await self._call(take, name, self._clock)

    async def levels(self) -> dict[str, float]:
        """Tokens each stored budget holds now."""
        rows = await self._call(_all)
        now = self._clock.now()
        return {
            name: level(
                Bucket(tokens=tokens, updated=from_db(updated)),
                capacity=capacity,
                per=per * _MICROSECOND,
                now=now,
            )
            for name, capacity, per, tokens, updated in rows
        }


def _take(
    conn: sqlite3.Connection,
    name: str,
    clock: Clock,
    *,
    capacity: int,
    per: timedelta,
    holder: str | None,
) -> timedelta | None:
    conn.execute("BEGIN IMMEDIATE")
    try:
        # Read under the write lock: takes by every process are stamped in commit order.
        now = clock.now()
        row = conn.execute(_READ_SQL, (name,)).fetchone()
        bucket = None if row is None else Bucket(tokens=row[0], updated=from_db(row[1]))
        if holder is None:
            after, wait = take_token(bucket, capacity=capacity, per=per, now=now)
        else:
            after, wait = _take_turn(
                conn, name, bucket, holder=holder, capacity=capacity, per=per, now=now
            )
        conn.execute(
            _WRITE_SQL,
            (name, capacity, per // _MICROSECOND, after.tokens, to_db(after.updated)),
        )
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")
    return wait


def _take_turn(
    conn: sqlite3.Connection,
    name: str,
    bucket: Bucket | None,
    *,
    holder: str,
    capacity: int,
    per: timedelta,
    now: datetime,
) -> tuple[Bucket, timedelta | None]:
    """The named take: forget stale turns, read the holder's, decide, keep or drop it."""
    conn.execute(_FORGET_TURNS_SQL, (name, to_db(turns_forgotten_before(now, per))))
    row = conn.execute(_READ_TURN_SQL, (name, holder)).fetchone()
    due = None if row is None else from_db(row[0])
    turn = take_turn(bucket, due, capacity=capacity, per=per, now=now)
    if turn.due is None:
        conn.execute(_DROP_TURN_SQL, (name, holder))
    elif turn.due != due:
        conn.execute(_WRITE_TURN_SQL, (name, holder, to_db(turn.due)))
    return turn.bucket, turn.wait


def _all(conn: sqlite3.Connection) -> list[tuple[str, int, int, float, int]]:
    return list(conn.execute(_ALL_SQL))
