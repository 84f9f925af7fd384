"""SQLite migration 0031 (ADR 85): the jobs' state CHECK takes 'fetch', and nothing else moves."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from transcriber_adapters.sqlite import SqliteJobRepository, connect, migrate, shipped_migrations
from transcriber_adapters.sqlite.times import to_db
from transcriber_core.clocks import ManualClock
from transcriber_core.entities import DeliveryKind, State

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


async def test_0031_keeps_jobs_deliveries_and_the_check(tmp_path: Path) -> None:
    """A job and its notice from before 0031 stay; 'fetch' is taken, a made-up state is not."""
    path = tmp_path / "jobs.db"
    conn = connect(path)
    try:
        migrate(conn, now=T0, migrations=[m for m in shipped_migrations() if m.version < 31])
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
        job = await repo.get("j")
        assert (job.state, job.source_url, job.progress) == (State.CONVERT, None, None)
        leased = await repo.acquire(State.CONVERT, acquisition_id="l", lease=timedelta(minutes=2))
        assert leased is not None
    finally:
        await repo.close()
    conn = connect(path)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        conn.execute(
            "INSERT INTO jobs (id, state, origin_kind, attempts, created, updated, source_url)"
            " VALUES ('k', 'fetch', 'http', 0, 0, 0, 'https://example.org/a.mp3')"
        )
        with pytest.raises(sqlite3.IntegrityError):
            conn.execute(
                "INSERT INTO jobs (id, state, origin_kind, attempts, created, updated)"
                " VALUES ('m', 'fetching', 'http', 0, 0, 0)"
            )
        with pytest.raises(sqlite3.IntegrityError):
            conn.execute("UPDATE jobs SET progress_total = -1 WHERE id = 'k'")
    finally:
        conn.close()
