"""``PostgresUsageStore``: seconds sent per payer per UTC day on PostgreSQL (ADR 59).

A charge is one short transaction: a transaction-scoped advisory lock on the
payer (charges of one payer queue on it, from every process on every host;
other payers' do not wait), then "now" read *after* the lock on the
database's clock, the payer's day summed, the core's ``charge_decision``,
and the insert keyed by the job id (``ON CONFLICT DO NOTHING``: a job
charged twice counts once).
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from transcriber_adapters.postgres.clock import now_param
from transcriber_adapters.postgres.connection import Database
from transcriber_core.policy import QuotaDecision, charge_decision
from transcriber_core.ports import Clock
from transcriber_core.usage import Charge, Usage, month_start, utc_day

#: The payer's lock, then the clock read after it: never before the previous charge's commit.
_LOCK = (
    "SELECT pg_advisory_xact_lock(hashtextextended('usage:' || %(payer)s, 0)),"
    " coalesce(%(now)s::timestamptz, clock_timestamp())"
)
_CHARGED = "SELECT 1 FROM usage_charges WHERE job_id = %(job_id)s"
_USED = (
    "SELECT coalesce(sum(seconds), 0.0) FROM usage_charges"
    " WHERE payer = %(payer)s AND day = %(day)s"
)
_INSERT = (
    "INSERT INTO usage_charges (job_id, payer, day, seconds, charged)"
    " VALUES (%(job_id)s, %(payer)s, %(day)s, %(seconds)s, %(charged)s)"
    " ON CONFLICT (job_id) DO NOTHING"
)
_SETTLE = "UPDATE usage_charges SET seconds = %(seconds)s WHERE job_id = %(job_id)s"
_UNCHARGE = "DELETE FROM usage_charges WHERE job_id = %(job_id)s"
_TODAY = "SELECT coalesce(%(now)s::timestamptz, statement_timestamp())"
_MONTHS = (
    "SELECT payer, coalesce(sum(seconds) FILTER (WHERE day = %(today)s), 0.0), sum(seconds)"
    " FROM usage_charges WHERE payer = ANY(%(payers)s)"
    " AND day >= %(first)s AND day <= %(today)s GROUP BY payer"
)


class PostgresUsageStore:
    """The ``usage_charges`` table of a shared ``Database``."""

    def __init__(self, database: Database, *, clock: Clock | None = None) -> None:
        """Use ``database``'s pool; times from ``clock`` when given, else the database's own."""
        self._db = database
        self._clock = clock

    async def charge(self, charge: Charge, *, limit: int) -> QuotaDecision:
        """Count ``charge`` today unless the quota refuses it; one short transaction."""
        async with self._db.transaction() as conn:
            cursor = await conn.execute(
                _LOCK, {"payer": charge.payer, "now": now_param(self._clock)}
            )
            row = await cursor.fetchone()
            if row is None:  # pragma: no cover - a SELECT without FROM returns its row
                raise AssertionError("the usage lock returned no row")
            now = row[1]
            day = utc_day(now)
            cursor = await conn.execute(_USED, {"payer": charge.payer, "day": day})
            used_row = await cursor.fetchone()
            used = float(used_row[0]) if used_row is not None else 0.0
            cursor = await conn.execute(_CHARGED, {"job_id": charge.job_id})
            charged_before = await cursor.fetchone() is not None
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
                    "charged": now,
                }
                await conn.execute(_INSERT, params)
        return decision

    async def settle(self, job_id: str, seconds: float) -> None:
        """Set the job's charge to ``seconds``; nothing when it was never charged."""
        await self._db.execute(_SETTLE, {"job_id": job_id, "seconds": float(seconds)})

    async def uncharge(self, job_id: str) -> None:
        """Take the job's charge back."""
        await self._db.execute(_UNCHARGE, {"job_id": job_id})

    async def usage(self, payers: Sequence[str]) -> dict[str, Usage]:
        """Each payer's seconds today and this month so far, on the database's clock."""
        row = await self._db.fetchone(_TODAY, {"now": now_param(self._clock)})
        if row is None:  # pragma: no cover - a SELECT without FROM returns its row
            raise AssertionError("the clock query returned no row")
        today = utc_day(row[0])
        params = {"payers": list(payers), "today": today, "first": month_start(today)}
        found = {payer: Usage(day=today) for payer in payers}
        for payer, day_total, month_total in await self._db.fetchall(_MONTHS, params):
            found[payer] = attrs.evolve(
                found[payer], today=float(day_total), month=float(month_total)
            )
        return found
