"""``PostgresSummaryStore``: each recording's summary on PostgreSQL, leased like a part (ADR 83).

The acquire is one ``UPDATE`` whose subselect locks its choice ``FOR UPDATE
OF s SKIP LOCKED``: a row another taker changed is re-tested on its newest
version (EvalPlanQual) and one it holds is skipped, so of any number of
takers on any hosts one gets each summary, with no second check. Saves and
renewals are fenced by the acquisition id in their ``WHERE``. Times are the
database's clock unless a test injects one (ADR 39).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta

from transcriber_adapters.postgres.clock import NOW_SQL, now_param
from transcriber_adapters.postgres.connection import Database
from transcriber_adapters.postgres.outbox import insert_deliveries
from transcriber_adapters.sql.rows import delivery_params
from transcriber_adapters.sql.summaries import SUMMARY_COLUMNS, summary_from_row, summary_params
from transcriber_core.entities import NewDelivery
from transcriber_core.errors import JobNotFound, LeaseLost
from transcriber_core.ports import Clock
from transcriber_core.summaries import PROMPT_VERSION, Summary

_REQUEST = (
    "INSERT INTO summaries (job_id, state, prompt_version, attempts, requested)"
    f" SELECT id, 'pending', %(prompt_version)s, 0, {NOW_SQL} FROM jobs WHERE id = %(job_id)s"
    " ON CONFLICT (job_id) DO UPDATE SET state = 'pending', text = NULL, points = '[]',"
    " actions = '[]', model = NULL, prompt_version = excluded.prompt_version, source = NULL,"
    " error = NULL, attempts = 0, acquisition_id = NULL, acquire_time = NULL,"
    " delay_time = NULL, requested = excluded.requested, created = NULL"
    f" RETURNING {SUMMARY_COLUMNS}"
)
_GET = f"SELECT {SUMMARY_COLUMNS} FROM summaries WHERE job_id = %(job_id)s"
_ACQUIRE = (
    f"UPDATE summaries SET acquisition_id = %(acquisition_id)s, acquire_time = {NOW_SQL},"
    " attempts = attempts + 1"
    " WHERE job_id = ("
    "SELECT s.job_id FROM summaries AS s JOIN jobs AS j ON j.id = s.job_id"
    " WHERE s.state = 'pending' AND j.state = 'done'"
    f" AND (s.delay_time IS NULL OR s.delay_time <= {NOW_SQL})"
    f" AND (s.acquisition_id IS NULL OR s.acquire_time <= {NOW_SQL} - %(lease)s::interval)"
    " ORDER BY s.requested, s.job_id LIMIT 1 FOR UPDATE OF s SKIP LOCKED"
    f") RETURNING {SUMMARY_COLUMNS}"
)
_RENEW = (
    f"UPDATE summaries SET acquire_time = {NOW_SQL}"
    " WHERE job_id = %(job_id)s AND acquisition_id = %(acquisition_id)s"
)
_SAVE = (
    "UPDATE summaries SET state = %(state)s, text = %(text)s, points = %(points)s,"
    " actions = %(actions)s, model = %(model)s, prompt_version = %(prompt_version)s,"
    " source = %(source)s, error = %(error)s, attempts = %(attempts)s, created = %(created)s,"
    " acquisition_id = %(new_holder)s,"
    " acquire_time = CASE WHEN %(new_holder)s::text IS NULL THEN NULL ELSE acquire_time END,"
    " delay_time = CASE WHEN %(delay)s::interval IS NULL THEN %(own_delay)s::timestamptz"
    f" ELSE {NOW_SQL} + %(delay)s::interval END"
    " WHERE job_id = %(job_id)s AND acquisition_id = %(held_by)s"
)


def _same(value: datetime) -> datetime:
    """``timestamptz`` arrives as an aware ``datetime`` already."""
    return value


class PostgresSummaryStore:
    """The ``summaries`` table of a shared ``Database``."""

    def __init__(self, database: Database, *, clock: Clock | None = None) -> None:
        """Use ``database``'s pool; times from ``clock`` when given, else the database's own."""
        self._db = database
        self._clock = clock

    async def request_summary(self, job_id: str) -> Summary:
        """Ask for the job's summary from scratch; ``JobNotFound`` when the job is gone."""
        params = {
            "job_id": job_id,
            "prompt_version": PROMPT_VERSION,
            "now": now_param(self._clock),
        }
        row = await self._db.fetchone(_REQUEST, params)
        if row is None:
            raise JobNotFound()
        return summary_from_row(row, _same)

    async def get_summary(self, job_id: str) -> Summary | None:
        """The job's summary, or None."""
        row = await self._db.fetchone(_GET, {"job_id": job_id})
        return None if row is None else summary_from_row(row, _same)

    async def count_pending_summaries(self) -> int:
        """Summaries asked for and neither built nor given up on."""
        row = await self._db.fetchone("SELECT count(*) FROM summaries WHERE state = 'pending'")
        return 0 if row is None else int(row[0])

    async def acquire_summary(self, *, acquisition_id: str, lease: timedelta) -> Summary | None:
        """Lease the next pending summary of a done job, oldest asked first."""
        params = {"acquisition_id": acquisition_id, "lease": lease, "now": now_param(self._clock)}
        row = await self._db.fetchone(_ACQUIRE, params)
        return None if row is None else summary_from_row(row, _same)

    async def renew_summary(self, job_id: str, *, acquisition_id: str) -> None:
        """Move the summary's lease to now; ``LeaseLost`` if not held."""
        params = {
            "job_id": job_id,
            "acquisition_id": acquisition_id,
            "now": now_param(self._clock),
        }
        if await self._db.execute(_RENEW, params) == 0:
            raise LeaseLost()

    async def save_summary_if_held(
        self,
        summary: Summary,
        *,
        acquisition_id: str,
        delay: timedelta | None = None,
        deliveries: Sequence[NewDelivery] = (),
    ) -> None:
        """Write the held summary's work and lease fields, and ``deliveries``; else ``LeaseLost``.

        The save and its deliveries commit together or not at all (the transactional outbox).
        """
        params = summary_params(summary, _same)
        params.update(held_by=acquisition_id, delay=delay, now=now_param(self._clock))
        if not deliveries:
            if await self._db.execute(_SAVE, params) == 0:
                raise LeaseLost()
            return
        async with self._db.transaction() as conn:
            cursor = await conn.execute(_SAVE, params)
            if cursor.rowcount == 0:
                raise LeaseLost()
            await insert_deliveries(
                conn, delivery_params(summary.job_id, deliveries, params["now"])
            )
