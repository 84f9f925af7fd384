"""``serve`` and ``transcriber worker`` on one PostgreSQL database (ADR 39), as real processes.

``serve`` runs no step; the worker on the same ``[database] url`` runs them
all, woken by ``NOTIFY`` from the process that made the work ready.
"""

from __future__ import annotations

import time
from pathlib import Path

import psycopg
import pytest

from tests.service.test_worker import api_and_worker, upload
from tests.support.postgres import PostgresServer
from transcriber_adapters.postgres.wakeups import APPLICATION_NAME

pytestmark = pytest.mark.slow

#: A poll so slow that only a wake-up from another process can explain a pickup in a test.
HOUR_POLL = {"queue": {"idle_poll_seconds": 3600}}


@pytest.fixture
def database_url(postgres: PostgresServer) -> str:
    """A fresh database of this run for one service test (dropped at the end of the run)."""
    return postgres.create_database()


def wait_listening(url: str, timeout: float = 30.0) -> None:
    """Wait until a process's wake-up feed holds its LISTEN connection on ``url``'s database."""
    deadline = time.monotonic() + timeout
    with psycopg.connect(url, autocommit=True) as conn:
        while True:
            row = conn.execute(
                "SELECT count(*) FROM pg_stat_activity"
                " WHERE datname = current_database() AND application_name = %s"
                " AND query ILIKE 'LISTEN%%'",
                (APPLICATION_NAME,),
            ).fetchone()
            if row is not None and row[0] > 0:
                return
            assert time.monotonic() < deadline, "the worker's wake-up feed never listened"
            time.sleep(0.1)


def test_a_worker_on_postgresql_runs_serves_uploads_woken_by_notify(
    tmp_path: Path, recording: bytes, database_url: str
) -> None:
    """Uploads to an API-only serve end done by a worker polling hourly: NOTIFY woke it."""
    database = {"database": {"url": database_url}}
    with api_and_worker(tmp_path, serve=database, worker={**database, **HOUR_POLL}) as (
        api,
        worker,
    ):
        wait_listening(database_url)
        first = upload(api, recording)
        assert api.wait_for_job(first, timeout=60)["state"] == "done"
        # The feed's wake-up of every step on connecting is long spent: only the
        # NOTIFY sent with the second upload can start it within the hour's poll.
        second = upload(api, recording)
        assert api.wait_for_job(second, timeout=60)["state"] == "done"
        worker_logs = worker.logs()
    for job_id in (first, second):
        assert any(
            "step.start" in line and job_id in line and "state=convert" in line
            for line in worker_logs.splitlines()
        )
    assert not (tmp_path / "data" / "transcriber.db").exists()
