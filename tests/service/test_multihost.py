"""Issue 12's service test: one API ``serve`` and three ``transcriber worker`` processes.

Every process is real and has its own data dir, as on separate hosts: they
share only one PostgreSQL database and one S3 bucket (moto), and recognise
through the fake SpeechKit. The fake runs on a loop of its own thread, so
the test can wait on the processes with plain blocking calls.

A worker is made slow or failing in its convert step by a fake ``ffmpeg``
first on its ``PATH``; a worker's clock is moved 5 minutes ahead with
libfaketime (Debian's ``faketime`` package), preloaded into the worker
itself so that the process the test signals is the worker.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import psycopg
import pytest

from tests.service.test_s3_files import files_config
from tests.service.test_worker import NO_STEPS, SOME_STEPS, _merged, lines_with, upload
from tests.support.fake_speechkit import STT_PATH, FakeSpeechKit
from tests.support.postgres import PostgresServer
from tests.support.s3 import MotoS3
from tests.support.service import WORKER_COMMAND, Service, running_service

#: Each test waits on several processes that start on a loaded machine.
pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

#: Where Debian's ``libfaketime`` package puts the library the ``faketime`` command preloads.
FAKETIME_LIBRARIES = ("/usr/lib/*/faketime/libfaketime.so.1", "/usr/lib/faketime/libfaketime.so.1")
#: A worker that only converts, one loop: whatever job it takes, it holds.
CONVERT_ONLY = {"workers": {"convert": 1, "recognize": 0, "check": 0}}
#: Seconds a test waits for an upload to end on this loaded 2-CPU machine.
JOB_TIMEOUT = 120.0


@pytest.fixture
def database_url(postgres: PostgresServer) -> str:
    """A fresh database of this run for one test (dropped at the end of the run)."""
    return postgres.create_database()


@contextlib.contextmanager
def speechkit_in_thread(**options: Any) -> Iterator[FakeSpeechKit]:
    """A running FakeSpeechKit served by an event loop on a thread of its own."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, name="fake-speechkit", daemon=True)
    thread.start()
    fake = FakeSpeechKit(**options)
    try:
        asyncio.run_coroutine_threadsafe(fake.__aenter__(), loop).result(30)
        try:
            yield fake
        finally:
            asyncio.run_coroutine_threadsafe(fake.__aexit__(None, None, None), loop).result(30)
    finally:
        loop.call_soon_threadsafe(loop.stop)
        thread.join(30)
        loop.close()


class Cluster:
    """The config every process shares, and the processes started on it, each its own host."""

    def __init__(
        self, root: Path, stack: contextlib.ExitStack, shared: Mapping[str, Mapping[str, Any]]
    ) -> None:
        self.root = root
        self.stack = stack
        self.shared = shared
        self.env = {"AWS_EC2_METADATA_DISABLED": "true"}

    def serve(self) -> Service:
        """The API process: takes uploads, runs no step."""
        return self.stack.enter_context(
            running_service(
                self.root / "serve", config=_merged(self.shared, NO_STEPS), env=self.env
            )
        )

    def worker(
        self,
        name: str,
        *,
        config: Mapping[str, Mapping[str, Any]] = SOME_STEPS,
        env: Mapping[str, str] | None = None,
    ) -> Service:
        """A ``transcriber worker`` on a data dir of its own."""
        return self.stack.enter_context(
            running_service(
                self.root / name,
                config=_merged(self.shared, config),
                env={**self.env, **(env or {})},
                command=WORKER_COMMAND,
                listener="worker",
            )
        )


@contextlib.contextmanager
def cluster(
    tmp_path: Path,
    moto: MotoS3,
    fake: FakeSpeechKit,
    database_url: str,
    queue: Mapping[str, Any] | None = None,
) -> Iterator[Cluster]:
    """Processes on one database and one bucket; all stopped (killed) on the way out."""
    shared = files_config(moto, moto.new_bucket(), fake)
    shared["database"] = {"url": database_url}
    shared["queue"] = dict(queue or {})
    with contextlib.ExitStack() as stack:
        yield Cluster(tmp_path, stack, shared)


def fake_ffmpeg(folder: Path, body: str) -> dict[str, str]:
    """An ``ffmpeg`` in ``folder`` running the Python ``body``; the env that puts it first."""
    folder.mkdir()
    program = folder / "ffmpeg"
    program.write_text(f"#!{sys.executable}\nimport pathlib, sys, time\n{body}\n")
    program.chmod(0o755)
    return {"PATH": f"{folder}{os.pathsep}{os.environ.get('PATH', '')}"}


def stuck_ffmpeg(folder: Path, started: Path) -> dict[str, str]:
    """An ``ffmpeg`` that notes it started in the file ``started``, then hangs for an hour."""
    return fake_ffmpeg(folder, f"pathlib.Path({str(started)!r}).touch()\ntime.sleep(3600)")


def busy_ffmpeg(folder: Path) -> dict[str, str]:
    """An ``ffmpeg`` that fails as if the disk were busy: a transient failure, retried."""
    return fake_ffmpeg(
        folder, 'print("Resource temporarily unavailable", file=sys.stderr)\nsys.exit(1)'
    )


def wait_for_file(path: Path, process: Service, timeout: float = 60.0) -> None:
    """Wait until ``path`` exists, failing early if ``process`` exits."""
    deadline = time.monotonic() + timeout
    while not path.exists():
        assert process.process.poll() is None, process.logs()
        assert time.monotonic() < deadline, f"{path.name} never appeared:\n{process.logs()}"
        time.sleep(0.05)


def faketime_env(offset: str) -> dict[str, str]:
    """The environment that runs a process with its wall clock ``offset`` (``+5m``) off.

    The ``faketime`` command forks and does not pass signals on, so the
    library is preloaded into the worker itself. Monotonic time stays real:
    asyncio's timers keep their pace, only the host's wall clock is skewed.
    """
    found = sorted(
        str(library) for pattern in FAKETIME_LIBRARIES for library in Path("/").glob(pattern[1:])
    )
    if not found:
        pytest.fail(
            "libfaketime is missing: install Debian's faketime package (scripts/test does)",
            pytrace=False,
        )
    return {"LD_PRELOAD": found[0], "FAKETIME": offset, "FAKETIME_DONT_FAKE_MONOTONIC": "1"}


def rows(url: str, sql: str, parameters: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
    """The rows of one query on the shared database, behind the processes' backs."""
    with psycopg.connect(url, autocommit=True) as conn:
        return conn.execute(sql, parameters).fetchall()


def acquisition(url: str, job_id: str) -> tuple[str, str | None]:
    """A job's state and the id of the lease on it (None: not leased)."""
    [(state, lease)] = rows(url, "SELECT state, acquisition_id FROM jobs WHERE id = %s", (job_id,))
    return state, lease


def recognised_objects(fake: FakeSpeechKit) -> Counter[str]:
    """How many recognitions SpeechKit was asked to start for each object (by its URI)."""
    return Counter(request.body["audio"]["uri"] for request in fake.requests_to(STT_PATH))


def converted_key(url: str, job_id: str) -> str:
    """The object key of a job's converted audio."""
    [(key,)] = rows(
        url,
        "SELECT f.object_key FROM files f JOIN jobs j ON j.converted_file_id = f.id"
        " WHERE j.id = %s",
        (job_id,),
    )
    assert isinstance(key, str)
    return key


def step_starts(logs: Sequence[str], job_id: str, state: str) -> int:
    """How many times the processes with these logs started ``state``'s step on the job."""
    fragments = ("step.start", f"job_id={job_id}", f"state={state}")
    return sum(len(lines_with(log, *fragments)) for log in logs)


def test_thirty_uploads_through_three_workers_are_each_recognised_once(
    tmp_path: Path, moto_s3: MotoS3, recording: bytes, database_url: str
) -> None:
    """serve + 3 workers on PostgreSQL and S3: 30 uploads end done, each recognised once."""
    with (
        speechkit_in_thread(storage_url=moto_s3.endpoint_url) as fake,
        cluster(tmp_path, moto_s3, fake, database_url) as hosts,
    ):
        api = hosts.serve()
        workers = [hosts.worker(f"worker-{n}") for n in range(3)]
        job_ids = [upload(api, recording) for _ in range(30)]
        states = [api.wait_for_job(job_id, timeout=JOB_TIMEOUT)["state"] for job_id in job_ids]
        keys = {job_id: converted_key(database_url, job_id) for job_id in job_ids}
        logs = [worker.logs() for worker in workers]
        recognised = recognised_objects(fake)
    assert states == ["done"] * 30
    assert len(set(keys.values())) == 30
    # One SpeechKit operation per job, on that job's converted object, and no other.
    assert sorted(recognised.values()) == [1] * 30, recognised
    assert {uri.rpartition("/")[2] for uri in recognised} == {
        key.rpartition("/")[2] for key in keys.values()
    }
    for job_id in job_ids:
        for state in ("convert", "recognize", "check"):
            assert step_starts(logs, job_id, state) == 1, (job_id, state)


def test_a_job_of_a_killed_worker_is_done_after_its_lease_exactly_once(
    tmp_path: Path, moto_s3: MotoS3, recording: bytes, database_url: str
) -> None:
    """SIGKILL mid-convert: after the lease another worker ends the job, once; the rest go on."""
    started = tmp_path / "ffmpeg-started"
    queue = {"lease_seconds": 4, "lease_renewal_seconds": 1}
    with (
        speechkit_in_thread(storage_url=moto_s3.endpoint_url) as fake,
        cluster(tmp_path, moto_s3, fake, database_url, queue) as hosts,
    ):
        api = hosts.serve()
        doomed = hosts.worker(
            "doomed", config=CONVERT_ONLY, env=stuck_ffmpeg(tmp_path / "stuck", started)
        )
        job_id = upload(api, recording)
        wait_for_file(started, doomed)
        others = [hosts.worker(f"worker-{n}") for n in range(2)]
        # The doomed worker renews its lease: the others, running, leave the job alone.
        state, lease = acquisition(database_url, job_id)
        assert state == "convert"
        assert lease is not None
        assert doomed.kill() == -signal.SIGKILL
        assert api.wait_for_job(job_id, timeout=JOB_TIMEOUT)["state"] == "done"
        after = [upload(api, recording) for _ in range(4)]
        after_states = [api.wait_for_job(j, timeout=JOB_TIMEOUT)["state"] for j in after]
        key = converted_key(database_url, job_id)
        logs = [worker.logs() for worker in others]
        recognised = recognised_objects(fake)
    assert after_states == ["done"] * 4
    assert step_starts(logs, job_id, "convert") == 1
    assert [count for uri, count in recognised.items() if uri.endswith("/" + key)] == [1]
    # One final save: the check that ended the job, in one worker only.
    finals = sum(len(lines_with(log, "step.end", f"job_id={job_id}", "to=done")) for log in logs)
    assert finals == 1
    assert sorted(recognised.values()) == [1] * 5


def test_a_worker_five_minutes_ahead_takes_no_live_lease_and_delays_no_retry(
    tmp_path: Path, moto_s3: MotoS3, recording: bytes, database_url: str
) -> None:
    """A worker 5 min ahead skips a live lease; the job it fails is retried after the pause."""
    started = tmp_path / "ffmpeg-started"
    # Far shorter than the skew: a worker judging leases by its own clock takes this one.
    queue = {"lease_seconds": 30, "lease_renewal_seconds": 5}
    with (
        speechkit_in_thread(storage_url=moto_s3.endpoint_url) as fake,
        cluster(tmp_path, moto_s3, fake, database_url, queue) as hosts,
    ):
        api = hosts.serve()
        holder = hosts.worker(
            "holder", config=CONVERT_ONLY, env=stuck_ffmpeg(tmp_path / "stuck", started)
        )
        held = upload(api, recording)
        wait_for_file(started, holder)
        lease = acquisition(database_url, held)
        assert lease[0] == "convert"
        assert lease[1] is not None
        # Woken by NOTIFY only: after its one failure nothing makes it acquire again.
        ahead_config = _merged(CONVERT_ONLY, {"queue": {**queue, "idle_poll_seconds": 3600}})
        ahead = hosts.worker(
            "ahead",
            config=ahead_config,
            env={**faketime_env("+5m"), **busy_ffmpeg(tmp_path / "busy")},
        )
        failed = upload(api, recording)
        # The oldest eligible job goes first: taking the newer one means the held one was not.
        ahead.wait_for_log("step.retry", f"job_id={failed}", timeout=JOB_TIMEOUT)
        assert not lines_with(ahead.logs(), "step.start", f"job_id={held}")
        assert acquisition(database_url, held) == lease
        [(pause,)] = rows(
            database_url,
            "SELECT extract(epoch FROM delay_time - statement_timestamp())::float8"
            " FROM jobs WHERE id = %s",
            (failed,),
        )
        # The first retry pause is a second on the database's clock, not 5 minutes more.
        assert pause < 10, pause
        assert ahead.stop() == 0
        hosts.worker("rescuer")
        retried = api.wait_for_job(failed, timeout=JOB_TIMEOUT)
        assert acquisition(database_url, held) == lease
    assert retried["state"] == "done", retried
    assert len(recognised_objects(fake)) == 1
