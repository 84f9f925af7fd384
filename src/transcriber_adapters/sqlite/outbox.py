"""The outbox half of ``SqliteJobRepository`` (ADR 35): the ``deliveries`` table.

Deliveries (the core chose them) are inserted by ``write_deliveries`` inside
the transaction that moves their job (``create``, ``save_if_held``), and taken with the same
one-statement lease as jobs. Every time is the repository's own clock,
through ``times.to_db``.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from transcriber_adapters.sql.outbox import DUE
from transcriber_adapters.sql.rows import delivery_params
from transcriber_adapters.sqlite.connection import SqliteStore
from transcriber_adapters.sqlite.statements import ROWS
from transcriber_adapters.sqlite.times import to_db
from transcriber_core.entities import Delivery, DeliveryKind, NewDelivery
from transcriber_core.errors import LeaseLost

#: Columns of ``deliveries`` in the order every statement selects or returns them.
DELIVERY_COLUMNS: tuple[str, ...] = (
    "id",
    "job_id",
    "kind",
    "event",
    "attempts",
    "acquisition_id",
    "acquire_time",
    "due",
    "created",
    "last_error",
)
_DELIVERY_LIST = ", ".join(DELIVERY_COLUMNS)

#: A delivery row ``d`` that may be handed out; binds ``:now`` and ``:cutoff``. The
#: first NOT EXISTS keeps a job's deliveries of one kind in order; the second keeps
#: one delivery per job in flight. Both walk ``deliveries_job``.
_ELIGIBLE = (
    "d.due <= :now"
    " AND (d.acquisition_id IS NULL OR d.acquire_time <= :cutoff)"
    " AND NOT EXISTS (SELECT 1 FROM deliveries AS e"
    " WHERE e.job_id = d.job_id AND e.kind = d.kind AND e.id < d.id)"
    " AND NOT EXISTS (SELECT 1 FROM deliveries AS e"
    " WHERE e.job_id = d.job_id AND e.id <> d.id"
    " AND e.acquisition_id IS NOT NULL AND e.acquire_time > :cutoff)"
)

#: Lease the next due delivery in one statement; parameters: ``acquisition_id``, ``now``,
#: ``cutoff``. As with ``ACQUIRE_SQL``, the UPDATE holds SQLite's write lock before the
#: subselect reads, so no other writer can commit between the choice and the lease.
ACQUIRE_DELIVERY_SQL = (
    "UPDATE deliveries"
    " SET acquisition_id = :acquisition_id, acquire_time = :now, attempts = attempts + 1"
    " WHERE id = ("
    f"SELECT d.id FROM deliveries AS d WHERE {_ELIGIBLE} ORDER BY d.due, d.id LIMIT 1"
    f") RETURNING {_DELIVERY_LIST}"
)

#: ``ACQUIRE_DELIVERY_SQL`` for one job's deliveries (an intake sending its own notice at
#: once); parameters: those and ``job_id``. The same one statement, walking ``deliveries_job``.
ACQUIRE_JOB_DELIVERY_SQL = (
    "UPDATE deliveries"
    " SET acquisition_id = :acquisition_id, acquire_time = :now, attempts = attempts + 1"
    " WHERE id = ("
    f"SELECT d.id FROM deliveries AS d WHERE d.job_id = :job_id AND {_ELIGIBLE}"
    " ORDER BY d.due, d.id LIMIT 1"
    f") RETURNING {_DELIVERY_LIST}"
)

#: ``ACQUIRE_DELIVERY_SQL`` for one kind (a notice loop, a webhook loop; ADR 44); parameters:
#: those and ``kind``. Walks ``deliveries_due`` skipping the other kind's rows.
ACQUIRE_KIND_DELIVERY_SQL = (
    "UPDATE deliveries"
    " SET acquisition_id = :acquisition_id, acquire_time = :now, attempts = attempts + 1"
    " WHERE id = ("
    f"SELECT d.id FROM deliveries AS d WHERE d.kind = :kind AND {_ELIGIBLE}"
    " ORDER BY d.due, d.id LIMIT 1"
    f") RETURNING {_DELIVERY_LIST}"
)


#: Appended to ``READY_STATES_SQL``: one more row, ``DUE``, when a delivery is eligible, so
#: the poller learns both in one query; parameters: ``now``, ``cutoff``.
DELIVERY_DUE_ROW = (
    f" UNION ALL SELECT '{DUE}' WHERE EXISTS (SELECT 1 FROM deliveries AS d WHERE {_ELIGIBLE})"
)

#: Give a held delivery back, due later; parameters: ``id``, ``held_by``, ``due``, ``error``.
RETRY_DELIVERY_SQL = (
    "UPDATE deliveries SET acquisition_id = NULL, acquire_time = NULL,"
    " due = :due, last_error = :error WHERE id = :id AND acquisition_id = :held_by"
)

#: Remove a held delivery; parameters: ``id``, ``held_by``.
FINISH_DELIVERY_SQL = "DELETE FROM deliveries WHERE id = :id AND acquisition_id = :held_by"

#: Add a delivery; parameters: ``job_id``, ``kind``, ``event``, ``now``.
INSERT_DELIVERY_SQL = (
    "INSERT INTO deliveries (job_id, kind, event, due, created)"
    " SELECT :job_id, :kind, :event, :now, :now"
    # One waiting progress notice shows the job as it is when sent: no second (ADR 51).
    " WHERE :event <> 'progress' OR NOT EXISTS (SELECT 1 FROM deliveries"
    " WHERE job_id = :job_id AND kind = :kind AND event = 'progress'"
    " AND acquisition_id IS NULL)"
)

#: Note the job's status message if the delivery is held; parameters: ``id``, ``held_by``,
#: ``message_id``. No row changes when it is not (nor when its job is gone, which takes
#: its deliveries with it).
SAVE_STATUS_MESSAGE_SQL = (
    "UPDATE jobs SET status_message_id = :message_id WHERE id = ("
    "SELECT job_id FROM deliveries WHERE id = :id AND acquisition_id = :held_by)"
)

#: Deliveries by kind.
COUNT_DELIVERIES_SQL = "SELECT kind, count(*) FROM deliveries GROUP BY kind"


def write_deliveries(
    conn: sqlite3.Connection, job_id: str, deliveries: Sequence[NewDelivery], now: datetime
) -> None:
    """Insert ``deliveries`` for the job; run inside the job's transaction."""
    params = delivery_params(job_id, deliveries, to_db(now))
    if params:
        conn.executemany(INSERT_DELIVERY_SQL, params)


class SqliteOutbox(SqliteStore):
    """The outbox methods of the job repository, on the store's connection and clock."""

    async def acquire_delivery(
        self,
        *,
        acquisition_id: str,
        lease: timedelta,
        job_id: str | None = None,
        kind: DeliveryKind | None = None,
    ) -> Delivery | None:
        """Lease the next due delivery with ``ACQUIRE_DELIVERY_SQL``; None when none is due."""
        now = self._clock.now()
        params = {"acquisition_id": acquisition_id, "now": to_db(now), "cutoff": to_db(now - lease)}
        if job_id is None and kind is not None:
            params["kind"] = kind.value
            return await self._call(_acquire_delivery, ACQUIRE_KIND_DELIVERY_SQL, params)
        if job_id is None:
            return await self._call(_acquire_delivery, ACQUIRE_DELIVERY_SQL, params)
        params["job_id"] = job_id
        return await self._call(_acquire_delivery, ACQUIRE_JOB_DELIVERY_SQL, params)

    async def retry_delivery(
        self, delivery: Delivery, *, acquisition_id: str, delay: timedelta, error: str
    ) -> None:
        """Give the lease back, due ``delay`` from now; ``LeaseLost`` unless held."""
        params = {
            "id": delivery.id,
            "held_by": acquisition_id,
            "due": to_db(self._clock.now() + delay),
            "error": error,
        }
        await self._call(_fenced, RETRY_DELIVERY_SQL, params)

    async def finish_delivery(self, delivery: Delivery, *, acquisition_id: str) -> None:
        """Remove a delivery sent or given up; ``LeaseLost`` unless held."""
        params = {"id": delivery.id, "held_by": acquisition_id}
        await self._call(_fenced, FINISH_DELIVERY_SQL, params)

    async def save_status_message(
        self, delivery: Delivery, message_id: int, *, acquisition_id: str
    ) -> None:
        """Note the status message with ``SAVE_STATUS_MESSAGE_SQL``; ``LeaseLost`` unless held."""
        params = {"id": delivery.id, "held_by": acquisition_id, "message_id": message_id}
        await self._call(_fenced, SAVE_STATUS_MESSAGE_SQL, params)

    async def pending_deliveries(self) -> dict[DeliveryKind, int]:
        """How many deliveries of each kind wait or run."""
        return await self._call(_pending_deliveries)


def _acquire_delivery(
    conn: sqlite3.Connection, sql: str, params: dict[str, Any]
) -> Delivery | None:
    # fetchall steps the statement to its end, which commits it (see _acquire).
    rows = conn.execute(sql, params).fetchall()
    return ROWS.delivery_from_row(rows[0]) if rows else None


def _fenced(conn: sqlite3.Connection, sql: str, params: dict[str, Any]) -> None:
    if conn.execute(sql, params).rowcount == 0:
        raise LeaseLost()


def _pending_deliveries(conn: sqlite3.Connection) -> dict[DeliveryKind, int]:
    return {
        ROWS.delivery_kind_of(kind): count for kind, count in conn.execute(COUNT_DELIVERIES_SQL)
    }
