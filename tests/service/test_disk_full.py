"""A full disk is the service's condition, not the job's, on a real tmpfs data dir (reference).

The red team filled the data dir's disk: an in-flight job went ``dead`` in
about 50 s and needed a manual revive, while ``/health`` said ``ok``. Here
the data dir is a small tmpfs (mounted as root, as CI runs): the job must
wait without spending attempts, ``/health`` must answer 503 ``disk_full``,
intake 507 ``insufficient_storage``; once space returns the job reaches
``done`` by itself and ``/health`` is 200 again.
"""

from __future__ import annotations

import errno
import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.support.media import FFMPEG, generate
from tests.support.service import POLL_INTERVAL, Service, running_service
from transcriber_adapters.ffmpeg import command

pytestmark = pytest.mark.slow

#: Size of the tmpfs the data dir lives on.
DISK_BYTES = 32 * 1024 * 1024
#: ``[storage] min_free_bytes`` of the service under test.
MIN_FREE = 256 * 1024
#: Free space left after the upload: above ``MIN_FREE``, below the converted audio.
SLACK = 128 * 1024
#: Acquires a job may take: a wait that spent attempts would kill the job after two.
MAX_ATTEMPTS = 2
#: Waits the job must survive before the disk fills up completely.
WAITS = MAX_ATTEMPTS + 2


#: The mount tools, found once; a machine without them fails the test, never skips it.
MOUNT = shutil.which("mount") or "/bin/mount"
UMOUNT = shutil.which("umount") or "/bin/umount"


def free_bytes(path: Path) -> int:
    """What an unprivileged writer may still use on ``path``'s filesystem."""
    stats = os.statvfs(path)
    return stats.f_bavail * stats.f_frsize


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A fresh tmpfs of ``DISK_BYTES``; fails loudly (never skips) when it cannot be mounted."""
    mount_point = tmp_path / "disk"
    mount_point.mkdir()
    mounted = subprocess.run(
        [MOUNT, "-t", "tmpfs", "-o", f"size={DISK_BYTES},mode=0700", "tmpfs", str(mount_point)],
        capture_output=True,
        text=True,
        check=False,
    )
    if mounted.returncode != 0:
        pytest.fail(f"this test needs root to mount a tmpfs: {mounted.stderr.strip()}")
    try:
        yield mount_point
    finally:
        subprocess.run([UMOUNT, "-l", str(mount_point)], check=False)


@pytest.fixture(scope="module")
def noise(tmp_path_factory: pytest.TempPathFactory) -> tuple[bytes, int]:
    """Two minutes of 8 kHz white noise as WAV, and the size of its converted Ogg/Opus."""
    folder = tmp_path_factory.mktemp("noise")
    source = generate(
        folder / "noise.wav",
        *("-f", "lavfi", "-i", "anoisesrc=d=120:c=white:r=8000:a=0.5"),
        *("-ac", "1", "-c:a", "pcm_s16le"),
    )
    converted = folder / "noise.ogg"
    subprocess.run(command(FFMPEG, source, converted), check=True, capture_output=True, timeout=60)
    return source.read_bytes(), converted.stat().st_size


def fill(path: Path, leave: int) -> None:
    """Grow the file ``path`` until its filesystem has about ``leave`` bytes free (0: full)."""
    with path.open("ab") as filler:
        for block in (1024 * 1024, 64 * 1024, 4096):
            while free_bytes(path.parent) - block >= leave:
                try:
                    filler.write(b"\0" * block)
                    filler.flush()
                except OSError as exc:
                    if exc.errno != errno.ENOSPC:
                        raise
                    break


def job_row(service: Service, job_id: str) -> tuple[str, int, str | None]:
    """The job's state, attempts and error, read from the database."""
    [row] = service.query("SELECT state, attempts, error FROM jobs WHERE id = ?", (job_id,))
    return row[0], row[1], row[2]


def wait_for_waits(service: Service, job_id: str, count: int, timeout: float = 60.0) -> None:
    """Until the job has waited out the disk ``count`` times, checking it never died meanwhile."""
    deadline = time.monotonic() + timeout
    while True:
        waits = [
            line
            for line in service.log_lines()
            if "step.service_condition" in line and job_id in line and "disk_full" in line
        ]
        state, attempts, _ = job_row(service, job_id)
        assert state == "convert", f"the job left convert while the disk was full: {state}"
        assert attempts <= 1
        if len(waits) >= count:
            return
        assert time.monotonic() < deadline, f"only {len(waits)} waits in {timeout} s"
        time.sleep(POLL_INTERVAL)


def health(service: Service) -> httpx.Response:
    """``GET /health``."""
    with service.client() as client:
        return client.get("/health")


def test_full_disk_makes_the_job_wait_and_health_say_so(
    tmp_path: Path, small_disk: Path, noise: tuple[bytes, int]
) -> None:
    """Disk full: the job waits (never dead), /health 503 disk_full, intake 507; then recovers."""
    recording, converted_size = noise
    assert converted_size > MIN_FREE + SLACK + 64 * 1024, "the converted audio must not fit"
    config = {
        "storage": {"min_free_bytes": MIN_FREE},
        "queue": {
            "max_attempts": MAX_ATTEMPTS,
            "condition_pause_seconds": 0.5,
            "lease_seconds": 3.0,
            "lease_renewal_seconds": 1.0,
        },
    }
    data_dir = small_disk / "data"
    filler = small_disk / "filler"
    with running_service(tmp_path / "service", config=config, data_dir=data_dir) as service:
        service.check_answers()  # the 503s and the 507 included
        # Room for the upload, not for its conversion: the job is accepted, then hits the wall.
        fill(filler, leave=len(recording) + MIN_FREE + SLACK)
        with service.client() as client:
            accepted = client.post(
                "/api/audio", files={"file": ("noise.wav", recording, "audio/wav")}
            )
        assert accepted.status_code == 202, accepted.text
        job_id = accepted.json()["job_id"]

        wait_for_waits(service, job_id, WAITS)
        error = job_row(service, job_id)[2]
        assert error is not None
        assert "no space left" in error
        assert "/" not in error
        answer = health(service)
        assert answer.status_code == 503
        assert answer.json()["error"] == "disk_full"
        with service.client() as client:
            status = client.get(f"/api/status/{job_id}").json()
        assert status["state"] == "convert"
        assert "error" not in status, "the sender must not read the service's own trouble"

        # Now the disk is completely full: nothing may be taken in, nothing may die.
        fill(filler, leave=0)
        assert free_bytes(small_disk) < MIN_FREE
        with service.client() as client:
            refused = client.post(
                "/api/audio", files={"file": ("noise.wav", recording, "audio/wav")}
            )
        assert refused.status_code == 507, refused.text
        assert refused.json()["error"] == "insufficient_storage"
        answer = health(service)
        assert answer.status_code == 503
        assert answer.json()["error"] == "disk_full"
        # Several lease and pause periods on a full disk: the job is still waiting.
        deadline = time.monotonic() + 4.0
        while time.monotonic() < deadline:
            assert job_row(service, job_id)[0] == "convert"
            time.sleep(0.1)

        filler.unlink()
        done = service.wait_for_job(job_id, timeout=60)
        assert done["state"] == "done", done
        deadline = time.monotonic() + 10
        while (answer := health(service)).status_code != 200:
            assert time.monotonic() < deadline, answer.text
            time.sleep(POLL_INTERVAL)
        assert answer.text == "ok\n"
