"""``SqliteUsageStore``: seconds sent per payer per UTC day in the SQLite file (ADR 59).

A charge reads the payer's day and writes its row in one ``BEGIN IMMEDIATE``
transaction: every writer on the file waits for it, so two intakes never
both take the last seconds of a day, and the day is the store's clock's
read under that lock.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

import attrs

from transcriber_adapters.sqlite.connection import SqliteStore
from transcriber_adapters.sqlite.schema import immediate
from transcriber_adapters.sqlite.times import to_db
from transcriber_core.policy import QuotaDecision, charge_decision
from transcriber_core.ports import Clock
from transcriber_core.usage import Charge, Usage, month_start, utc_day

_CHARGED = "SELECT 1 FROM usage_charges WHERE job_id = :job_id"
_USED = "SELECT coalesce(sum(seconds), 0.0) FROM usage_charges WHERE payer = :payer AND day = :day"
_INSERT = (
    "INSERT INTO usage_charges (job_id, payer, day, seconds, charged)"
    " VALUES (:job_id, :payer, :day, :seconds, :charged)"
)
_SETTLE = "UPDATE usage_charges SET seconds = :seconds WHERE job_id = :job_id"
_UNCHARGE = "DELETE FROM usage_charges WHERE job_id = :job_id"
_MONTH = (
    "SELECT payer, coalesce(sum(CASE WHEN day = :today THEN seconds END), 0.0), sum(seconds)"
    " FROM usage_charges WHERE payer = :payer AND day >= :first AND day <= :today GROUP BY payer"
)


class SqliteUsageStore(SqliteStore):
    """The ``UsageStore`` port on a SQLite file; ``await SqliteUsageStore.open()`` makes one."""

    _what = "the usage store"

    async def charge(self, charge: Charge, *, limit: int) -> QuotaDecision:
        """Count ``charge`` today unless the quota refuses it, in one write transaction."""
        return await self._call(_charge, charge, limit, self._clock)

    async def settle(self, job_id: str, seconds: float) -> None:
        """Set the job's charge to ``seconds``; nothing when it was never charged."""
        await self._call(_execute, _SETTLE, {"job_id": job_id, "seconds": float(seconds)})

    async def uncharge(self, job_id: str) -> None:
        """Take the job's charge back."""
        await self._call(_execute, _UNCHARGE, {"job_id": job_id})

    async def usage(self, payers: Sequence[str]) -> dict[str, Usage]:
        """Each payer's seconds today and this month so far, on the store's clock."""
        today = utc_day(self._clock.now())
        first = month_start(today).isoformat()
        rows = await self._call(_months, list(payers), today.isoformat(), first)
        found = {payer: Usage(day=today) for payer in payers}
        for payer, day_total, month_total in rows:
            found[payer] = attrs.evolve(found[payer], today=day_total, month=month_total)
        return found


# The operations below run on the connection thread; each takes the connection first.


def _execute(conn: sqlite3.Connection, sql: str, params: dict[str, object]) -> None:
    conn.execute(sql, params)


def _charge(conn: sqlite3.Connection, charge: Charge, limit: int, clock: Clock) -> QuotaDecision:
    with immediate(conn):
        # Read under the write lock: charges from every process are judged in commit order.
        now = clock.now()
        day = utc_day(now).isoformat()
        (used,) = conn.execute(_USED, {"payer": charge.payer, "day": day}).fetchone()
        charged_before = conn.execute(_CHARGED, {"job_id": charge.job_id}).fetchone() is not None
        decision = charge_decision(
            now=now,
            used=used,
            incoming=charge.seconds,
            limit=limit,
            charged_before=charged_before,
        )
        if decision.allowed and not charged_before:
            params = {
                "job_id": charge.job_id,
                "payer": charge.payer,
                "day": day,
                "seconds": float(charge.seconds),
                "charged": to_db(now),
            }
            conn.execute(_INSERT, params)
    return decision


def _months(
    conn: sqlite3.Connection, payers: list[str], today: str, first: str
) -> list[tuple[str, float, float]]:
    rows: list[tuple[str, float, float]] = []
    for payer in payers:
        params = {"payer": payer, "today": today, "first": first}
        rows.extend(conn.execute(_MONTH, params).fetchall())
    return rows
