"""Issue 20's service test: the parts of one long recording shared by worker processes (ADR 52).

One API ``serve`` and two ``transcriber worker`` processes, each on a data dir
of its own as on separate hosts, share one PostgreSQL database and one S3
bucket (moto). The memory recognizer takes at most 12 s a recognition and
works 2 s inside each start, as Whisper does, so a 60-second recording is six
parts that any worker takes. One worker is SIGKILLed in the middle of a part:
that part is taken again once its lease ran out, no other part is done twice,
and the transcript is the parts joined in order.
"""

from __future__ import annotations

import contextlib
import json
import signal
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tests.service.test_multihost import Cluster, rows
from tests.service.test_worker import lines_with, upload
from tests.support.media import generate
from tests.support.postgres import PostgresServer
from tests.support.s3 import ACCESS_KEY_ID, REGION, SECRET_ACCESS_KEY, MotoS3
from tests.support.service import Service

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

#: Pauses (start, end) in the tone: each is where one part must end (search windows of 12 s).
PAUSES = ((9.6, 10.6), (20.2, 21.2), (31.6, 32.4), (41.2, 42.0), (52.4, 53.2))
#: The recording's length, in seconds: six parts of distinct lengths.
SECONDS = 60
#: One worker: one recognize loop (it takes parts, no express lane at one loop), one check loop.
PART_WORKER = {"workers": {"convert": 1, "recognize": 1, "check": 1}}
#: Seconds a test waits for the job on this loaded 2-CPU machine.
JOB_TIMEOUT = 150.0


@pytest.fixture(scope="module")
def sixty_seconds(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    """60 s of tone with the ``PAUSES`` in it, 16 kHz mono WAV."""
    silent = "+".join(f"between(t\\,{start}\\,{end})" for start, end in PAUSES)
    return generate(
        tmp_path_factory.mktemp("parts") / "sixty.wav",
        *("-f", "lavfi", "-i"),
        f"aevalsrc=sin(2*PI*440*t)*not({silent}):s=16000:d={SECONDS}",
    ).read_bytes()


def part_starts(logs: list[str], job_id: str) -> Counter[int]:
    """How many times the processes with these logs started work on each part of the job."""
    counts: Counter[int] = Counter()
    for log in logs:
        for line in lines_with(log, "event=part.start ", f"job_id={job_id}"):
            field = next(word for word in line.split() if word.startswith("part="))
            counts[int(field.removeprefix("part="))] += 1
    return counts


def wait_for_part_starts(process: Service, job_id: str, count: int, timeout: float = 60.0) -> None:
    """Wait until ``process`` started ``count`` parts of the job; fail if it exits first."""
    deadline = time.monotonic() + timeout
    while sum(part_starts([process.logs()], job_id).values()) < count:
        assert process.process.poll() is None, process.logs()
        assert time.monotonic() < deadline, f"{count} parts never started:\n{process.logs()}"
        time.sleep(0.05)


def test_a_worker_killed_mid_part_costs_that_part_only(
    tmp_path: Path, moto_s3: MotoS3, postgres: PostgresServer, sixty_seconds: bytes
) -> None:
    """Two workers share six parts; SIGKILL one mid-part: done, that part redone once, in order."""
    database_url = postgres.create_database()
    shared: dict[str, Any] = {
        "recognizer": {"kind": "memory"},
        "memory": {"max_seconds": 12, "work_seconds": 2},
        "storage": {"files": "s3"},
        "s3": {
            "endpoint_url": moto_s3.endpoint_url,
            "region": REGION,
            "bucket": moto_s3.new_bucket(),
            "access_key_id": ACCESS_KEY_ID,
            "secret_access_key": SECRET_ACCESS_KEY,
            "path_style": True,
        },
        "database": {"url": database_url},
        "queue": {"lease_seconds": 4, "lease_renewal_seconds": 1},
    }
    with contextlib.ExitStack() as stack:
        hosts = Cluster(tmp_path, stack, shared)
        api = hosts.serve()
        doomed = hosts.worker("doomed", config=PART_WORKER)
        survivor = hosts.worker("survivor", config=PART_WORKER)
        job_id = upload(api, sixty_seconds, "sixty.wav")
        # Killed in its second part: its first one is done and must not be redone.
        wait_for_part_starts(doomed, job_id, 2)
        assert doomed.kill() == -signal.SIGKILL
        body = api.wait_for_job(job_id, timeout=JOB_TIMEOUT)
        logs = [doomed.logs(), survivor.logs()]
    assert body["state"] == "done", body
    parts = rows(
        database_url,
        "SELECT part_index, text, attempts, acquisition_id, failed FROM job_parts"
        " WHERE job_id = %s ORDER BY part_index",
        (job_id,),
    )
    [(text, words)] = rows(database_url, "SELECT text, words FROM jobs WHERE id = %s", (job_id,))
    assert [index for index, *_ in parts] == list(range(6))
    texts = [part_text for _, part_text, *_ in parts]
    assert all(texts)
    # Each part's text names its own length: six different texts, joined in index order.
    assert len(set(texts)) == 6
    assert text == " ".join(texts)
    starts = [word["start"] for word in (words if isinstance(words, list) else json.loads(words))]
    assert starts == sorted(starts)
    assert all(lease is None and not failed for *_, lease, failed in parts)
    started = part_starts(logs, job_id)
    # The killed worker's part was started twice; every other part once.
    assert sorted(started.values()) == [1, 1, 1, 1, 1, 2], started
    assert sum(started.values()) == 7
    # Both workers recognised parts: the job is shared, not held by one of them.
    doomed_parts, survivor_parts = (part_starts([log], job_id) for log in logs)
    assert sum(doomed_parts.values()) == 2
    assert sum(survivor_parts.values()) == 5
    [killed] = [index for index, count in started.items() if count == 2]
    assert doomed_parts[killed] == survivor_parts[killed] == 1
