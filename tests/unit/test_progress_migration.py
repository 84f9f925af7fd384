"""SQLite migration 0015 (ADR 51): the outbox made again keeps every delivery owed."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from transcriber_adapters.sqlite import SqliteJobRepository, connect, migrate, shipped_migrations
from transcriber_adapters.sqlite.times import to_db
from transcriber_core.clocks import ManualClock
from transcriber_core.entities import DeliveryKind, Event

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


async def test_deliveries_owed_before_0015_are_kept_and_progress_is_allowed(
    tmp_path: Path,
) -> None:
    """A notice written before 0015 is still there after it, in order, and sent as before."""
    path = tmp_path / "jobs.db"
    conn = connect(path)
    try:
        migrate(conn, now=T0, migrations=[m for m in shipped_migrations() if m.version < 15])
        at = to_db(T0)
        conn.execute(
            "INSERT INTO jobs (id, state, origin_kind, origin_chat_id, origin_message_id,"
            " attempts, created, updated) VALUES ('j', 'convert', 'telegram', 7, 70, 0, ?, ?)",
            (at, at),
        )
        conn.execute(
            "INSERT INTO deliveries (job_id, kind, event, due, created)"
            " VALUES ('j', 'notice', 'accepted', ?, ?)",
            (at, at),
        )
    finally:
        conn.close()
    repo = await SqliteJobRepository.open(path, clock=ManualClock(T0))
    try:
        assert await repo.pending_deliveries() == {DeliveryKind.NOTICE: 1}
        delivery = await repo.acquire_delivery(acquisition_id="loop", lease=timedelta(minutes=2))
        assert delivery is not None
        assert (delivery.job_id, delivery.event) == ("j", Event.ACCEPTED)
        job = await repo.get("j")
        assert (job.progress, job.status_message_id) == (None, None)
    finally:
        await repo.close()
    conn = connect(path)
    try:
        indexes = {row[1] for row in conn.execute("PRAGMA index_list('deliveries')")}
        conn.execute(
            "INSERT INTO deliveries (job_id, kind, event, due, created)"
            " VALUES ('j', 'notice', 'progress', 0, 0)"
        )
    finally:
        conn.close()
    assert {"deliveries_due", "deliveries_job"} <= indexes
