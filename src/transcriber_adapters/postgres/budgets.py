"""``PostgresBudgetStore``: request budgets shared by every process on the database (ADR 29, 32).

A take is one short transaction holding the budget's row lock: an upsert
that creates the bucket full or locks the stored one, returning it with the
clock's "now" read *after* the lock; the core's ``take_token`` does the
arithmetic (the same code as SQLite's and memory's); an UPDATE writes the
result. Takers from every process queue on the row, so no two spend the
last token, and "now" is the database's clock, so a host whose clock is
off neither refills early nor waits by its skew. A named take reads and
writes its holder's turn (``budget_turns``, ADR 61) under the same row lock.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from psycopg import AsyncConnection

from transcriber_adapters.postgres.clock import now_param
from transcriber_adapters.postgres.connection import Database
from transcriber_core.budgets import (
    Bucket,
    burst_of,
    level,
    take_token,
    take_turn,
    turns_forgotten_before,
)
from transcriber_core.ports import Clock

# ON CONFLICT DO UPDATE locks the row; RETURNING is evaluated after the lock is held, so
# clock_timestamp() there is never before the previous taker's commit.
_LOCK = (
    "INSERT INTO budgets AS b (name, capacity, per, tokens, updated)"
    " VALUES (%(name)s, %(capacity)s, %(per)s, %(burst)s,"
    " coalesce(%(now)s::timestamptz, clock_timestamp()))"
    " ON CONFLICT (name) DO UPDATE SET capacity = b.capacity"
    " RETURNING b.tokens, b.updated, coalesce(%(now)s::timestamptz, clock_timestamp())"
)
_WRITE = (
    "UPDATE budgets SET capacity = %(capacity)s, per = %(per)s, tokens = %(tokens)s,"
    " updated = %(updated)s WHERE name = %(name)s"
)
_FORGET_TURNS = "DELETE FROM budget_turns WHERE name = %(name)s AND due < %(cutoff)s"
_READ_TURN = "SELECT due FROM budget_turns WHERE name = %(name)s AND holder = %(holder)s"
_WRITE_TURN = (
    "INSERT INTO budget_turns (name, holder, due) VALUES (%(name)s, %(holder)s, %(due)s)"
    " ON CONFLICT (name, holder) DO UPDATE SET due = excluded.due"
)
_DROP_TURN = "DELETE FROM budget_turns WHERE name = %(name)s AND holder = %(holder)s"
_ALL = (
    "SELECT name, capacity, per, tokens, updated,"
    " coalesce(%(now)s::timestamptz, statement_timestamp()) FROM budgets ORDER BY name"
)


class PostgresBudgetStore:
    """Token buckets in the ``budgets`` table of a shared ``Database``."""

    def __init__(self, database: Database, *, clock: Clock | None = None) -> None:
        """Use ``database``'s pool; times from ``clock`` when given, else the database's own."""
        self._db = database
        self._clock = clock

    async def take(
        self, name: str, *, capacity: int, per: timedelta, holder: str | None = None
    ) -> timedelta | None:
        """Take a token of ``name`` or say how long until one is back; one short transaction."""
        burst = burst_of(capacity)
        if per <= timedelta(0):
            raise ValueError("a budget's period must be positive")
        params = {
            "name": name,
            "capacity": capacity,
            "per": per,
            "burst": float(burst),
            "now": now_param(self._clock),
        }
        async with self._db.transaction() as conn:
            cursor = await conn.execute(_LOCK, params)
            row = await cursor.fetchone()
            if row is None:  # pragma: no cover - an upsert with RETURNING always returns its row
                raise AssertionError("the budget row was neither inserted nor locked")
            tokens, updated, now = row
            bucket = Bucket(tokens=tokens, updated=updated)
            if holder is None:
                after, wait = take_token(bucket, capacity=capacity, per=per, now=now)
            else:
                after, wait = await _take_turn(
                    conn, name, bucket, holder=holder, capacity=capacity, per=per, now=now
                )
            await conn.execute(
                _WRITE,
                {
                    "name": name,
                    "capacity": capacity,
                    "per": per,
                    "tokens": after.tokens,
                    "updated": after.updated,
                },
            )
        return wait

    async def levels(self) -> dict[str, float]:
        """Tokens each stored budget holds now, by name."""
        rows = await self._db.fetchall(_ALL, {"now": now_param(self._clock)})
        return {
            name: level(Bucket(tokens=tokens, updated=updated), capacity=capacity, per=per, now=now)
            for name, capacity, per, tokens, updated, now in rows
        }


async def _take_turn(
    conn: AsyncConnection[Any],
    name: str,
    bucket: Bucket,
    *,
    holder: str,
    capacity: int,
    per: timedelta,
    now: datetime,
) -> tuple[Bucket, timedelta | None]:
    """The named take under the bucket's row lock: forget stale turns, decide, keep or drop."""
    await conn.execute(_FORGET_TURNS, {"name": name, "cutoff": turns_forgotten_before(now, per)})
    cursor = await conn.execute(_READ_TURN, {"name": name, "holder": holder})
    row = await cursor.fetchone()
    due = None if row is None else row[0]
    turn = take_turn(bucket, due, capacity=capacity, per=per, now=now)
    if turn.due is None:
        await conn.execute(_DROP_TURN, {"name": name, "holder": holder})
    elif turn.due != due:
        await conn.execute(_WRITE_TURN, {"name": name, "holder": holder, "due": turn.due})
    return turn.bucket, turn.wait
