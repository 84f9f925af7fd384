"""Acceptance scenarios (docs/reference.md), HTTP side, through the real service process.

1 first start and restart, 6 the sender's file name, 12 stored
names in logs, 15 SIGKILL mid-conversion, 16 Idempotency-Key; and
SIGTERM letting a running step finish.
"""

from __future__ import annotations

import os
import stat
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.support.service import Service, running_service

pytestmark = pytest.mark.slow

SECRET_NAME = "секретное-слово.mp3"


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Service]:
    """The service on the embedded defaults (but for data dir, port and temp dir)."""
    with running_service(tmp_path_factory.mktemp("acceptance")) as started:
        yield started


def upload(
    service: Service,
    data: bytes,
    filename: str = "voice.mp3",
    headers: dict[str, str] | None = None,
) -> httpx.Response:
    """POST ``data`` as the ``file`` field; the answer must be a 202."""
    with service.client() as client:
        response = client.post(
            "/api/audio", files={"file": (filename, data)}, headers=headers or {}
        )
    assert response.status_code == 202, response.text
    return response


def lines_with(logs: str, *fragments: str) -> list[str]:
    """The log lines that hold every fragment."""
    return [line for line in logs.splitlines() if all(f in line for f in fragments)]


def source_file(service: Service, job_id: str) -> tuple[str, str]:
    """The stored name and size-independent id of a job's source file, from the database."""
    [(file_id, extension)] = service.query(
        "SELECT files.id, files.extension FROM jobs JOIN files ON files.id = jobs.source_file_id"
        " WHERE jobs.id = ?",
        (job_id,),
    )
    return file_id, f"{file_id}{extension}"


def test_first_start_creates_schema_and_restart_creates_nothing(
    tmp_path: Path, recording: bytes
) -> None:
    """Acceptance 1: an empty data dir gets its schema; a restart re-applies nothing, keeps jobs."""
    data = tmp_path / "data"
    with running_service(tmp_path / "first", data_dir=data) as first:
        assert (data / "transcriber.db").is_file()
        migrations = first.query("SELECT version, applied FROM schema_migrations ORDER BY version")
        assert migrations[0][0] == 1
        schema = first.query("SELECT type, name, sql FROM sqlite_master ORDER BY name")
        job_id = upload(first, recording).json()["job_id"]
        done = first.wait_for_job(job_id)
        assert done["state"] == "done"
        assert first.stop() == 0
    files = sorted(path.name for path in (data / "files").iterdir())
    with running_service(tmp_path / "second", data_dir=data) as second:
        again = second.query("SELECT version, applied FROM schema_migrations ORDER BY version")
        assert again == migrations
        assert second.query("SELECT type, name, sql FROM sqlite_master ORDER BY name") == schema
        assert second.wait_for_job(job_id) == done
        assert second.query("SELECT count(*) FROM jobs") == [(1,)]
        assert second.stored_names() == files
        assert second.stop() == 0


def test_sender_file_name_reaches_neither_storage_nor_logs(
    service: Service, recording: bytes
) -> None:
    """Acceptance 6: a file sent as секретное-слово.mp3 is stored as <id>.mp3 and logged nowhere."""
    job_id = upload(service, recording, filename=SECRET_NAME).json()["job_id"]
    assert service.wait_for_job(job_id)["state"] == "done"
    file_id, name = source_file(service, job_id)
    assert name == f"{file_id}.mp3"
    stored = service.data_dir / "files" / name
    assert stored.read_bytes() == recording
    everything = [*service.root.rglob("*")]
    for word in ("секретное", "слово", "секрет"):
        assert not [path for path in everything if word in path.name]
        assert word not in service.logs()
        assert word not in service.stdout()


def test_stored_names_appear_in_no_log_line(
    service: Service, recording: bytes, tmp_path: Path
) -> None:
    """Acceptance 12: no log line names a stored file: on success, a failed convert, a retry."""
    done = upload(service, recording).json()["job_id"]
    failed = upload(service, b"garbage, not a recording " * 40, filename="junk.ogg").json()[
        "job_id"
    ]
    assert service.wait_for_job(done)["state"] == "done"
    assert service.wait_for_job(failed)["state"] == "failed"

    # A converter that fails as if the disk were busy, printing its arguments
    # (the stored path) the way ffmpeg does: the job is retried, then dead.
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "ffmpeg"
    # Python, not sh: ffmpeg runs in a removed working directory, where a shell
    # would first print its own "getcwd() failed: No such file or directory".
    fake.write_text(
        f"#!{sys.executable}\n"
        "import sys\n"
        'print("fake ffmpeg", *sys.argv[1:], file=sys.stderr)\n'
        'print("Resource temporarily unavailable", file=sys.stderr)\n'
        "sys.exit(1)\n"
    )
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    env = {"PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"}
    config = {"queue": {"max_attempts": 1}}
    with running_service(tmp_path / "retrying", config=config, env=env) as retrying:
        dead = upload(retrying, recording).json()["job_id"]
        status = retrying.wait_for_job(dead)
        assert status["state"] == "dead"
        assert lines_with(retrying.logs(), "step.retry", dead)
        retrying_logs = retrying.logs()
        retrying_names = retrying.stored_names()

    names = service.stored_names() + retrying_names
    assert len(names) >= 4  # the done job's two files, the failed and the dead job's sources
    logs = service.logs() + retrying_logs
    for name in names:
        file_id = name.split(".")[0]
        assert file_id not in logs, name
    assert "fake ffmpeg" not in logs
    assert str(service.data_dir) not in logs


def test_same_idempotency_key_gives_one_job_and_one_file(
    service: Service, recording: bytes
) -> None:
    """Acceptance 16: an upload retried with its Idempotency-Key returns the first job and file."""
    headers = {"Idempotency-Key": "retry-me-5f2a"}
    first = upload(service, recording, headers=headers)
    job_id = first.json()["job_id"]
    assert "idempotent-replayed" not in first.headers
    assert service.wait_for_job(job_id)["state"] == "done"
    names = service.stored_names()
    second = upload(service, recording, headers=headers)
    assert second.json() == {"job_id": job_id}
    assert second.headers["idempotent-replayed"] == "true"
    assert service.stored_names() == names
    assert service.query(
        "SELECT count(*) FROM jobs WHERE dedup_key LIKE ?", ("%retry-me-5f2a",)
    ) == [(1,)]
    assert service.staging_files() == []
    other = upload(service, recording, headers={"Idempotency-Key": "another-key"})
    assert other.json()["job_id"] != job_id


def test_sigkill_mid_conversion_is_recovered_within_the_lease(
    tmp_path: Path, long_recording: bytes
) -> None:
    """Acceptance 15: a job whose service was SIGKILLed mid-convert is done after restart, once."""
    config = {"queue": {"lease_seconds": 3, "lease_renewal_seconds": 1}}
    data = tmp_path / "data"
    with running_service(tmp_path / "first", config=config, data_dir=data) as first:
        job_id = upload(first, long_recording, filename="long.wav").json()["job_id"]
        first.wait_for_log("step.start", f"job_id={job_id}", "state=convert")
        time.sleep(0.3)
        first.kill()
        first_logs = first.logs()
    # The kill landed inside the conversion: it never ended.
    assert not lines_with(first_logs, "step.end", job_id)
    restarted = time.monotonic()
    with running_service(tmp_path / "second", config=config, data_dir=data) as second:
        status = second.wait_for_job(job_id, timeout=60)
        recovered = time.monotonic() - restarted
        assert status["state"] == "done"
        assert status["duration"] == pytest.approx(600, abs=1)
        assert lines_with(second.logs(), "step.start", job_id, "state=convert", "attempts=2")
        assert second.stop() == 0
        logs = first_logs + second.logs()
    assert recovered < 30  # the 3-second lease, one poll, one conversion: seconds, not hours
    assert len(lines_with(logs, "step.start", job_id, "state=recognize")) == 1
    assert len(lines_with(logs, "step.end", job_id, "to=done")) == 1


def test_sigterm_lets_the_running_step_finish_and_exits_0(
    tmp_path: Path, long_recording: bytes
) -> None:
    """SIGTERM mid-convert: the step finishes and is saved, no step starts, exit 0 within grace."""
    config = {"shutdown": {"grace_seconds": 20.0, "hard_seconds": 30.0}}
    with running_service(tmp_path, config=config) as service:
        job_id = upload(service, long_recording, filename="long.wav").json()["job_id"]
        service.wait_for_log("step.start", f"job_id={job_id}", "state=convert")
        signalled = time.monotonic()
        assert service.stop() == 0
        assert time.monotonic() - signalled < 20
        logs = service.logs()
        assert lines_with(logs, "step.end", job_id, "state=convert", "to=recognize")
        assert not lines_with(logs, "step.start", job_id, "state=recognize")
        assert lines_with(logs, "service.stopped")
        # Ctrl-C or SIGTERM says what the wait is for, at once.
        [stopping] = lines_with(logs, "event=service.stopping")
        assert 'note="stopping: waiting up to 20 s for 1 running steps"' in stopping
        assert service.staging_files() == []
        [(state,)] = service.query("SELECT state FROM jobs WHERE id = ?", (job_id,))
        assert state == "recognize"
