"""Converter hardening (reference: Limits), through the real service process and its real ffmpeg.

An upload that names another sender's stored recording, a duration bomb,
and a SIGKILL mid-conversion that must not leave ffmpeg running.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import pytest

from tests.support import media
from tests.support.processes import children
from tests.support.service import POLL_INTERVAL, Service, running_service

pytestmark = pytest.mark.slow

SENDER_ONE = "sender-one-token-7d1e"
SENDER_TWO = "sender-two-token-c40a"
TOKENS = {"http": {"api_tokens": [SENDER_ONE, SENDER_TWO]}}

T = TypeVar("T")


def _auth(token: str | None) -> dict[str, str]:
    return {} if token is None else {"Authorization": f"Bearer {token}"}


def _upload(service: Service, token: str | None, data: bytes, filename: str) -> str:
    """POST ``data`` as ``token``'s sender; the new job's id."""
    with service.client(headers=_auth(token)) as client:
        response = client.post("/api/audio", files={"file": (filename, data)})
    assert response.status_code == 202, response.text
    job_id: str = response.json()["job_id"]
    return job_id


def _attempts(service: Service, job_id: str) -> int:
    [(attempts,)] = service.query("SELECT attempts FROM jobs WHERE id = ?", (job_id,))
    return int(attempts)


def _stored_name(service: Service, job_id: str) -> str:
    [(name,)] = service.query(
        "SELECT files.id || files.extension FROM jobs JOIN files"
        " ON files.id = jobs.source_file_id WHERE jobs.id = ?",
        (job_id,),
    )
    return str(name)


def test_upload_naming_another_senders_recording_fails_at_once(tmp_path: Path) -> None:
    """ffconcat/HLS naming a stored file (relative, absolute, ..) fail at once, reading nothing."""
    with running_service(tmp_path, config=TOKENS) as service:
        wav = media.tone(tmp_path / "private.wav", 3.7).read_bytes()
        first = _upload(service, SENDER_ONE, wav, "private.wav")
        assert service.wait_for_job(first, headers=_auth(SENDER_ONE))["state"] == "done"
        stored = _stored_name(service, first)
        files = service.data_dir / "files"
        scripts = {
            "relative": f"ffconcat version 1.0\nfile {stored}\n",
            "absolute": f"ffconcat version 1.0\nfile {files / stored}\n",
            "dotdot": f"ffconcat version 1.0\nfile ../{files.name}/{stored}\n",
            "hls": f"#EXTM3U\n#EXT-X-TARGETDURATION:4\n#EXTINF:3.7,\n{stored}\n#EXT-X-ENDLIST\n",
        }
        for variant, script in scripts.items():
            name = "list.m3u8" if variant == "hls" else "voice.mp3"  # hls is probed by extension
            job_id = _upload(service, SENDER_TWO, script.encode(), name)
            status = service.wait_for_job(job_id, headers=_auth(SENDER_TWO))
            assert status["state"] == "failed", variant
            assert status["error"] == "the recording is not an audio or video file", variant
            assert "text" not in status, variant
            # The other sender's 3.7 s must leave no trace (a timestamp may hold "3.7").
            assert status.get("duration") is None, variant
            assert _attempts(service, job_id) == 1, variant
        assert stored not in service.logs()


def test_one_hertz_wav_fails_quickly_naming_the_limit(tmp_path: Path) -> None:
    """The 21,644-byte WAV that decodes to 6 h fails once, naming the bytes-per-second limit."""
    bomb = media.one_hertz_wav(tmp_path / "bomb.wav", 6 * 3600).read_bytes()
    assert len(bomb) == 21_644
    with running_service(tmp_path) as service:
        job_id = _upload(service, None, bomb, "bomb.wav")
        # Converting it whole took 211 s; refused, it ends in seconds.
        status = service.wait_for_job(job_id, timeout=60)
        assert status["state"] == "failed"
        assert "100 bytes per second" in status["error"]
        assert _attempts(service, job_id) == 1


def test_max_duration_from_the_config_is_applied(tmp_path: Path) -> None:
    """``[storage] max_duration_seconds`` reaches the converter: a longer recording fails."""
    config = {"storage": {"max_duration_seconds": 2.0}}
    with running_service(tmp_path, config=config) as service:
        job_id = _upload(service, None, media.tone(tmp_path / "t.mp3", 3.0).read_bytes(), "t.mp3")
        status = service.wait_for_job(job_id)
        assert status["state"] == "failed"
        assert status["error"] == "the recording is longer than the limit of 2 seconds"


def _alive(pid: int) -> bool:
    """True while ``pid`` runs (a zombie waiting for init has stopped running)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat[stat.rindex(")") + 2] != "Z"


def _wait_for(probe: Callable[[], T], timeout: float) -> T:
    """The first truthy answer of ``probe``, looked at every POLL_INTERVAL; AssertionError after."""
    deadline = time.monotonic() + timeout
    while not (answer := probe()):
        if time.monotonic() > deadline:
            raise AssertionError(f"still {answer!r} after {timeout} s")
        time.sleep(POLL_INTERVAL)
    return answer


def test_sigkill_mid_conversion_leaves_no_ffmpeg(tmp_path: Path, long_recording: bytes) -> None:
    """SIGKILL of the service kills its ffmpeg; the restarted service converts the job once."""
    config = {"queue": {"lease_seconds": 3, "lease_renewal_seconds": 1}}
    data = tmp_path / "data"
    with running_service(tmp_path / "first", config=config, data_dir=data) as first:
        job_id = _upload(first, None, long_recording, "long.wav")
        ffmpegs = _wait_for(lambda: children("ffmpeg", parent=first.pid), 20)
        # Like a crash: only the server is killed; nothing cleans up after it.
        first.process.kill()
        first.process.wait()
        # Killed as its parent exits, not at its next write to a closed pipe,
        # which an orphan reaches only seconds later, having written more output.
        _wait_for(lambda: not any(_alive(pid) for pid in ffmpegs), 1.0)
        first_logs = first.logs()
    with running_service(tmp_path / "second", config=config, data_dir=data) as second:
        status = second.wait_for_job(job_id, timeout=60)
        assert status["state"] == "done"
        assert status["duration"] == pytest.approx(600, abs=1)
        logs = first_logs + second.logs()
    done = [line for line in logs.splitlines() if "step.end" in line and "to=done" in line]
    assert len(done) == 1
