"""Outages of the service's own dependencies are its condition: a job spends no attempt on them.

A real ``serve`` and ``transcriber worker`` on PostgreSQL, a moto S3 server
on a fixed port that the test stops and starts again, and the fake
SpeechKit answering 500: the outages follow each other, as in the chaos
run that lost jobs to them (issue 26).
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from tests.service.test_multihost import cluster, speechkit_in_thread
from tests.service.test_worker import lines_with, upload
from tests.support.fake_speechkit import STT_PATH
from tests.support.postgres import PostgresServer
from tests.support.s3 import StoppableS3

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

#: Seconds the test waits for the job to end on this loaded 2-CPU machine.
JOB_TIMEOUT = 120.0


def start_after_log(s3: StoppableS3, log: Path, *fragments: str, timeout: float = 90.0) -> None:
    """Start ``s3`` again once a line of ``log`` holds every fragment (or after ``timeout``)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if log.exists() and lines_with(log.read_text(errors="replace"), *fragments):
            break
        time.sleep(0.05)
    s3.start()


def test_storage_down_then_speechkit_500s_do_not_make_a_job_dead(
    tmp_path: Path, recording: bytes, postgres: PostgresServer
) -> None:
    """S3 down at convert, then three SpeechKit 500s: with two attempts the job still ends done."""
    database_url = postgres.create_database()
    queue = {"max_attempts": 2, "condition_pause_seconds": 2}
    with (
        StoppableS3() as s3,
        speechkit_in_thread(storage_url=s3.moto.endpoint_url) as fake,
        cluster(tmp_path, s3.moto, fake, database_url, queue) as hosts,
    ):
        api = hosts.serve()
        job_id = upload(api, recording)
        for _ in range(3):
            fake.status_next_start(500)
        s3.stop()
        # The worker's convert meets the storage down; S3 comes back once it has.
        restarter = threading.Thread(
            target=start_after_log,
            args=(s3, tmp_path / "worker" / "stderr-1.log", "step.end", job_id, "to=convert"),
        )
        restarter.start()
        try:
            worker = hosts.worker("worker")
            body = api.wait_for_job(job_id, timeout=JOB_TIMEOUT)
        finally:
            restarter.join()
        starts = fake.requests_to(STT_PATH)
        logs = worker.logs()
    assert body["state"] == "done", (body, logs)
    # Three starts answered 500, then the one that worked.
    assert len(starts) == 4
    assert lines_with(logs, "step.service_condition", job_id, "code=storage_unavailable")
    assert len(lines_with(logs, "step.service_condition", job_id, "recognizer_unavailable")) == 3
