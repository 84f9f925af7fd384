"""``SqliteSummaryStore``: each recording's summary in the SQLite file, leased like a part (ADR 83).

The acquire is one ``UPDATE`` whose subselect picks the summary: SQLite's
write lock is taken before the subselect reads, so no other taker can
commit between the choice and the write and no second check is needed.
Saves and renewals are fenced by the acquisition id in their ``WHERE``.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from transcriber_adapters.sql.summaries import SUMMARY_COLUMNS, summary_from_row, summary_params
from transcriber_adapters.sqlite.connection import SqliteStore
from transcriber_adapters.sqlite.outbox import write_deliveries
from transcriber_adapters.sqlite.schema import read, write, write_returning
from transcriber_adapters.sqlite.times import from_db, to_db
from transcriber_core.entities import NewDelivery
from transcriber_core.errors import JobNotFound, LeaseLost
from transcriber_core.summaries import PROMPT_VERSION, Summary

#: Ask for a job's summary from scratch; no row when the job does not exist.
_REQUEST = (
    "INSERT INTO summaries (job_id, state, prompt_version, attempts, requested)"
    " SELECT id, 'pending', :prompt_version, 0, :now FROM jobs WHERE id = :job_id"
    " ON CONFLICT (job_id) DO UPDATE SET state = 'pending', text = NULL, points = '[]',"
    " actions = '[]', model = NULL, prompt_version = excluded.prompt_version, source = NULL,"
    " error = NULL, attempts = 0, acquisition_id = NULL, acquire_time = NULL,"
    " delay_time = NULL, requested = excluded.requested, created = NULL"
    f" RETURNING {SUMMARY_COLUMNS}"
)
_GET = f"SELECT {SUMMARY_COLUMNS} FROM summaries WHERE job_id = :job_id"
_COUNT_PENDING = "SELECT count(*) FROM summaries WHERE state = 'pending'"
#: The write lock is held before the subselect reads: its choice is still eligible at the write.
_ACQUIRE = (
    "UPDATE summaries SET acquisition_id = :acquisition_id, acquire_time = :now,"
    " attempts = attempts + 1"
    " WHERE job_id = ("
    "SELECT s.job_id FROM summaries AS s JOIN jobs AS j ON j.id = s.job_id"
    " WHERE s.state = 'pending' AND j.state = 'done'"
    " AND (s.delay_time IS NULL OR s.delay_time <= :now)"
    " AND (s.acquisition_id IS NULL OR s.acquire_time <= :lease_cutoff)"
    " ORDER BY s.requested, s.job_id LIMIT 1"
    f") RETURNING {SUMMARY_COLUMNS}"
)
_RENEW = (
    "UPDATE summaries SET acquire_time = :now"
    " WHERE job_id = :job_id AND acquisition_id = :acquisition_id"
)
#: ``acquire_time`` is the store's: kept while the lease is kept, cleared with it.
_SAVE = (
    "UPDATE summaries SET state = :state, text = :text, points = :points, actions = :actions,"
    " model = :model, prompt_version = :prompt_version, source = :source, error = :error,"
    " attempts = :attempts, created = :created, acquisition_id = :new_holder,"
    " acquire_time = CASE WHEN :new_holder IS NULL THEN NULL ELSE acquire_time END,"
    " delay_time = :delay_time"
    " WHERE job_id = :job_id AND acquisition_id = :held_by"
)


class SqliteSummaryStore(SqliteStore):
    """The ``SummaryStore`` port on a SQLite file; ``await SqliteSummaryStore.open()`` makes one."""

    _what = "the summary store"

    async def request_summary(self, job_id: str) -> Summary:
        """Ask for the job's summary from scratch; ``JobNotFound`` when the job is gone."""
        params = {
            "job_id": job_id,
            "prompt_version": PROMPT_VERSION,
            "now": to_db(self._clock.now()),
        }
        rows = await self._call(write_returning, _REQUEST, params)
        if not rows:
            raise JobNotFound()
        return summary_from_row(rows[0], from_db)

    async def get_summary(self, job_id: str) -> Summary | None:
        """The job's summary, or None."""
        rows = await self._call(read, _GET, {"job_id": job_id})
        return summary_from_row(rows[0], from_db) if rows else None

    async def count_pending_summaries(self) -> int:
        """Summaries asked for and neither built nor given up on."""
        rows = await self._call(read, _COUNT_PENDING, {})
        return int(rows[0][0])

    async def acquire_summary(self, *, acquisition_id: str, lease: timedelta) -> Summary | None:
        """Lease the next pending summary of a done job, oldest asked first."""
        now = self._clock.now()
        params = {
            "acquisition_id": acquisition_id,
            "now": to_db(now),
            "lease_cutoff": to_db(now - lease),
        }
        rows = await self._call(write_returning, _ACQUIRE, params)
        return summary_from_row(rows[0], from_db) if rows else None

    async def renew_summary(self, job_id: str, *, acquisition_id: str) -> None:
        """Move the summary's lease to now; ``LeaseLost`` if not held."""
        params = {
            "job_id": job_id,
            "acquisition_id": acquisition_id,
            "now": to_db(self._clock.now()),
        }
        if await self._call(write, _RENEW, params) == 0:
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
        now = self._clock.now()
        params = summary_params(summary, to_db)
        own = params.pop("own_delay")
        params["delay_time"] = own if delay is None else to_db(now + delay)
        params["held_by"] = acquisition_id
        if not await self._call(_save, params, summary.job_id, tuple(deliveries), now):
            raise LeaseLost()


def _save(
    conn: sqlite3.Connection,
    params: dict[str, Any],
    job_id: str,
    deliveries: tuple[NewDelivery, ...],
    now: datetime,
) -> bool:
    if conn.execute(_SAVE, params).rowcount == 0:
        return False
    write_deliveries(conn, job_id, deliveries, now)
    return True
