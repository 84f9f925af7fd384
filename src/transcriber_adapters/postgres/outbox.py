"""The outbox half of ``PostgresJobRepository`` (ADR 35): the ``deliveries`` table.

Rows (the core chose them) are inserted by ``insert_deliveries`` inside the
transaction that moves their job; the acquire is one ``UPDATE … WHERE id = (SELECT … FOR UPDATE
SKIP LOCKED)`` like the jobs', so concurrent loops on many hosts skip each
other's candidates instead of waiting. "Now" is the database's clock
(``NOW_SQL``) unless a test injects one.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any, LiteralString

from psycopg import AsyncConnection

from transcriber_adapters.postgres.clock import NOW_SQL, now_param
from transcriber_adapters.postgres.connection import Database
from transcriber_adapters.postgres.statements import ROWS
from transcriber_adapters.sql.outbox import DUE
from transcriber_core.entities import Delivery, DeliveryKind
from transcriber_core.errors import LeaseLost
from transcriber_core.ports import Clock

_COLUMNS: LiteralString = (
    "id, job_id, kind, event, attempts, acquisition_id, acquire_time, due, created, last_error"
)

#: A delivery row ``d`` that may be handed out; binds ``now`` and ``lease``. The first
#: NOT EXISTS keeps a job's deliveries of one kind in order; the second keeps one delivery
#: per job in flight.
_ELIGIBLE: LiteralString = (
    f"d.due <= {NOW_SQL}"
    f" AND (d.acquisition_id IS NULL OR d.acquire_time <= {NOW_SQL} - %(lease)s::interval)"
    " AND NOT EXISTS (SELECT 1 FROM deliveries AS e"
    " WHERE e.job_id = d.job_id AND e.kind = d.kind AND e.id < d.id)"
    " AND NOT EXISTS (SELECT 1 FROM deliveries AS e"
    " WHERE e.job_id = d.job_id AND e.id <> d.id AND e.acquisition_id IS NOT NULL"
    f" AND e.acquire_time > {NOW_SQL} - %(lease)s::interval)"
)


def _acquire(extra: LiteralString) -> LiteralString:
    # SKIP LOCKED: a candidate another loop is taking right now is passed over, never
    # waited for; the outer UPDATE then holds it, so no second check is needed.
    return (
        f"UPDATE deliveries SET acquisition_id = %(acquisition_id)s, acquire_time = {NOW_SQL},"
        " attempts = attempts + 1 WHERE id = ("
        f"SELECT d.id FROM deliveries AS d WHERE {_ELIGIBLE}{extra}"
        " ORDER BY d.due, d.id LIMIT 1 FOR UPDATE SKIP LOCKED"
        f") RETURNING {_COLUMNS}"
    )


#: Lease the next due delivery; parameters: ``acquisition_id``, ``now``, ``lease``.
ACQUIRE_DELIVERY_SQL = _acquire("")
#: The same for one job's deliveries; also ``job_id``.
ACQUIRE_JOB_DELIVERY_SQL = _acquire(" AND d.job_id = %(job_id)s")
#: The same for one kind (a notice loop, a webhook loop; ADR 44); also ``kind``.
ACQUIRE_KIND_DELIVERY_SQL = _acquire(" AND d.kind = %(kind)s")

#: Appended to ``READY_STATES_SQL``: one more row, ``DUE``, when a delivery is eligible, so
#: the poller learns both in one query; parameters: ``now``, ``lease``.
DELIVERY_DUE_ROW: LiteralString = (
    f" UNION ALL SELECT '{DUE}' WHERE EXISTS (SELECT 1 FROM deliveries AS d WHERE {_ELIGIBLE})"
)
#: Give a held delivery back; parameters: ``id``, ``held_by``, ``now``, ``delay``, ``error``.
RETRY_DELIVERY_SQL = (
    "UPDATE deliveries SET acquisition_id = NULL, acquire_time = NULL,"
    f" due = {NOW_SQL} + %(delay)s::interval, last_error = %(error)s"
    " WHERE id = %(id)s AND acquisition_id = %(held_by)s"
)
#: Remove a held delivery; parameters: ``id``, ``held_by``.
FINISH_DELIVERY_SQL = "DELETE FROM deliveries WHERE id = %(id)s AND acquisition_id = %(held_by)s"
#: Add a delivery; parameters: ``job_id``, ``kind``, ``event``, ``now``.
INSERT_DELIVERY_SQL = (
    "INSERT INTO deliveries (job_id, kind, event, due, created)"
    f" SELECT %(job_id)s, %(kind)s, %(event)s, {NOW_SQL}, {NOW_SQL}"
    # One waiting progress notice shows the job as it is when sent: no second (ADR 51).
    " WHERE %(event)s::text <> 'progress' OR NOT EXISTS (SELECT 1 FROM deliveries"
    " WHERE job_id = %(job_id)s AND kind = %(kind)s AND event = 'progress'"
    " AND acquisition_id IS NULL)"
)

#: Note the job's status message if the delivery is held; parameters: ``id``, ``held_by``,
#: ``message_id``. No row changes when it is not (nor when its job is gone, which takes
#: its deliveries with it).
SAVE_STATUS_MESSAGE_SQL = (
    "UPDATE jobs SET status_message_id = %(message_id)s WHERE id = ("
    "SELECT job_id FROM deliveries WHERE id = %(id)s AND acquisition_id = %(held_by)s)"
)
#: Deliveries by kind.
COUNT_DELIVERIES_SQL = "SELECT kind, count(*) FROM deliveries GROUP BY kind"


async def insert_deliveries(conn: AsyncConnection[Any], params: list[dict[str, Any]]) -> None:
    """Insert deliveries made by ``rows.delivery_params``, in the caller's transaction."""
    if params:
        async with conn.cursor() as cursor:
            await cursor.executemany(INSERT_DELIVERY_SQL, params)


class PostgresOutbox:
    """The outbox methods of the job repository, on its ``Database`` and clock."""

    _db: Database
    _clock: Clock | None

    async def acquire_delivery(
        self,
        *,
        acquisition_id: str,
        lease: timedelta,
        job_id: str | None = None,
        kind: DeliveryKind | None = None,
    ) -> Delivery | None:
        """Lease the next due delivery in one statement; None when none is due."""
        params: dict[str, Any] = {
            "acquisition_id": acquisition_id,
            "lease": lease,
            "now": now_param(self._clock),
        }
        statement = ACQUIRE_DELIVERY_SQL
        if job_id is not None:
            statement = ACQUIRE_JOB_DELIVERY_SQL
            params["job_id"] = job_id
        elif kind is not None:
            statement = ACQUIRE_KIND_DELIVERY_SQL
            params["kind"] = kind.value
        row = await self._db.fetchone(statement, params)
        return None if row is None else ROWS.delivery_from_row(row)

    async def retry_delivery(
        self, delivery: Delivery, *, acquisition_id: str, delay: timedelta, error: str
    ) -> None:
        """Give the lease back, due ``delay`` from the database's now; ``LeaseLost`` unless held."""
        params = {
            "id": delivery.id,
            "held_by": acquisition_id,
            "delay": delay,
            "error": error,
            "now": now_param(self._clock),
        }
        if await self._db.execute(RETRY_DELIVERY_SQL, params) == 0:
            raise LeaseLost()

    async def finish_delivery(self, delivery: Delivery, *, acquisition_id: str) -> None:
        """Remove a delivery sent or given up; ``LeaseLost`` unless held."""
        params = {"id": delivery.id, "held_by": acquisition_id}
        if await self._db.execute(FINISH_DELIVERY_SQL, params) == 0:
            raise LeaseLost()

    async def save_status_message(
        self, delivery: Delivery, message_id: int, *, acquisition_id: str
    ) -> None:
        """Note the status message with ``SAVE_STATUS_MESSAGE_SQL``; ``LeaseLost`` unless held."""
        params = {"id": delivery.id, "held_by": acquisition_id, "message_id": message_id}
        if await self._db.execute(SAVE_STATUS_MESSAGE_SQL, params) == 0:
            raise LeaseLost()

    async def pending_deliveries(self) -> dict[DeliveryKind, int]:
        """How many deliveries of each kind wait or run."""
        rows = await self._db.fetchall(COUNT_DELIVERIES_SQL)
        return {ROWS.delivery_kind_of(kind): count for kind, count in rows}
