"""``serve`` and ``transcriber worker`` on one PostgreSQL database (ADR 39), as real processes.

``serve`` runs no step; the worker on the same ``[database] url`` runs them
all, woken by ``NOTIFY`` from the process that made the work ready.
"""

from __future__ import annotations

import asyncio
import re
import time
from pathlib import Path

import psycopg
import pytest

from tests.service.test_worker import api_and_worker, upload
from tests.support.admin import owner_client, service_with_owner
from tests.support.postgres import PostgresServer
from tests.support.service import Service
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


def swept_jobs(logs: str) -> int:
    """Jobs the ``retention.swept`` lines of one process's log say it deleted."""
    return sum(
        int(match.group(1))
        for line in logs.splitlines()
        if "retention.swept" in line
        for match in [re.search(r"\bjobs=(\d+)", line)]
        if match is not None
    )


def test_serve_and_a_worker_on_postgresql_sweep_each_ended_job_once(
    tmp_path: Path, database_url: str
) -> None:
    """Both processes offer to sweep every 0.2 s; the jobs ended 31 days ago go, each once."""
    config = {"database": {"url": database_url}, "retention": {"sweep_seconds": 0.2}}
    with api_and_worker(tmp_path, serve=config, worker=config) as (api, worker):
        with psycopg.connect(database_url, autocommit=True) as conn:
            conn.execute(
                "INSERT INTO jobs (id, state, origin_kind, text, created, updated, ended)"
                " SELECT 'old-' || g, 'done', 'http', 'words', now(), now(),"
                " now() - interval '31 days' FROM generate_series(1, 6) AS g"
            )
            deadline = time.monotonic() + 30
            while conn.execute("SELECT count(*) FROM jobs").fetchone() != (0,):
                assert time.monotonic() < deadline, "the ended jobs were never swept"
                time.sleep(0.1)
        # A sweep logs after its last batch: wait until the six are counted.
        deadline = time.monotonic() + 30
        while swept_jobs(api.logs()) + swept_jobs(worker.logs()) < 6:
            assert time.monotonic() < deadline, "no sweep logged the six jobs"
            time.sleep(0.1)
        assert swept_jobs(api.logs()) + swept_jobs(worker.logs()) == 6


#: Ids no job can have: a NUL (PostgreSQL refuses it in text), other controls, non-ASCII.
ODD_IDS = ("%00", "abc%00def", "%01x", "a%7Fb", "%C3%A9t%C3%A9", "x" * 300)


def test_an_odd_job_id_is_404_on_postgresql_in_the_api_and_the_admin(
    tmp_path: Path, database_url: str
) -> None:
    """A NUL or any other character no id holds is 404 (not 503 or 500) on every id route."""
    with service_with_owner(tmp_path, config={"database": {"url": database_url}}) as service:
        with service.client() as client:
            for odd in ODD_IDS:
                for method, path in (
                    ("GET", f"/api/status/{odd}"),
                    ("GET", f"/api/jobs/{odd}/transcript?format=txt"),
                    ("DELETE", f"/api/jobs/{odd}"),
                ):
                    answer = client.request(method, path)
                    assert answer.status_code == 404, (method, path, answer.text)
                    assert answer.json()["error"] == "job_not_found"
        asyncio.run(_admin_pages_answer_404(service))
        assert "Traceback" not in service.logs()


async def _admin_pages_answer_404(service: Service) -> None:
    async with owner_client(service) as owner:
        for odd in ODD_IDS:
            for path in (
                f"/admin/jobs/{odd}",
                f"/admin/jobs/{odd}/transcript?format=txt",
                f"/admin/files/{odd}",
                f"/admin/?q={odd}",
            ):
                answer = await owner.get(path)
                assert answer.status_code == 404, (path, answer.text)


def test_a_v1_answer_is_woken_by_the_job_ending_in_the_worker(
    tmp_path: Path, recording: bytes, database_url: str
) -> None:
    """/v1 on an API-only serve answers a job a worker ends, both polling hourly: NOTIFY woke it."""
    database = {"database": {"url": database_url}}
    serve = {**database, **HOUR_POLL, "memory": {"text": "Woken by the worker."}}
    worker = {**database, **HOUR_POLL, "memory": {"text": "Woken by the worker."}}
    with api_and_worker(tmp_path, serve=serve, worker=worker) as (api, _):
        wait_listening(database_url)
        with api.client(timeout=60) as client:
            started = time.monotonic()
            response = client.post(
                "/v1/audio/transcriptions",
                files={"file": ("a.mp3", recording)},
                data={"model": "whisper-1", "response_format": "text"},
            )
            seconds = time.monotonic() - started
    assert response.status_code == 200, response.text
    assert response.text == "Woken by the worker."
    assert response.headers["transcriber-job-id"]
    # Not a speed claim (bench/openai.py measures it): far inside the hour's poll.
    assert seconds < 60
