"""Files at rest and crash leftovers on the real service (reference: Limits, ADR 21)."""

from __future__ import annotations

import contextlib
import os
import stat
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.support.multipart import CONTENT_TYPE, RawClient, part
from tests.support.service import POLL_INTERVAL, Service, running_service, start_failing

pytestmark = pytest.mark.slow

#: What the slow client says it will send: a large recording.
DECLARED = 200 * 1024 * 1024
#: What it sends before the server is killed.
SENT = 8 * 1024 * 1024


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@contextlib.contextmanager
def _umask(mask: int) -> Iterator[None]:
    """Run the block (and the processes it starts) under ``mask``."""
    old = os.umask(mask)
    try:
        yield
    finally:
        os.umask(old)


def _leftovers(service: Service) -> dict[str, int]:
    """Sizes of the files in the data dir's staging folders and the service's system temp dir."""
    staging = service.data_dir / "tmp"
    found = [("data", path) for path in staging.rglob("*") if not path.is_dir()]
    found.extend(("system", path) for path in service.temp_dir.iterdir())
    return {f"{where}:{path.name}": path.stat().st_size for where, path in found}


def _wait_for_staged_bytes(service: Service, at_least: int, timeout: float = 20.0) -> None:
    """Poll until some staging file holds ``at_least`` bytes; AssertionError after ``timeout``."""
    deadline = time.monotonic() + timeout
    while max(_leftovers(service).values(), default=0) < at_least:
        if time.monotonic() > deadline:
            raise AssertionError(f"no staging file reached {at_least} bytes: {_leftovers(service)}")
        time.sleep(POLL_INTERVAL)


def test_sigkill_mid_upload_leaves_nothing_after_restart(tmp_path: Path) -> None:
    """A server SIGKILLed mid-upload leaves a partial file; the restart leaves none anywhere."""
    data = tmp_path / "data"
    with running_service(tmp_path / "run", data_dir=data) as first:
        head = part("file", b"", filename="long.wav")[:-2]  # the part's headers, no data yet
        with RawClient(first.port) as raw:
            raw.send_head(
                "/api/audio",
                {"Content-Type": CONTENT_TYPE, "Content-Length": str(len(head) + DECLARED)},
            )
            raw.send(head + b"\x00" * SENT)
            _wait_for_staged_bytes(first, SENT // 2)
            first.kill()
        left = _leftovers(first)
    # The crash did leave a partial upload behind.
    assert any(size >= SENT // 2 for size in left.values()), left
    with running_service(tmp_path / "run", data_dir=data) as second:
        assert _leftovers(second) == {}
        assert second.wait_for_log("files.staging_removed", "count=1")
        assert second.stored_names() == []
        assert second.query("SELECT count(*) FROM jobs") == [(0,)]


def test_data_dir_database_and_files_are_private(tmp_path: Path, recording: bytes) -> None:
    """Under umask 022 the data dir is 0700 and the database, WAL files and stored files 0600."""
    data = tmp_path / "data"
    data.mkdir(mode=0o755)
    data.chmod(0o755)  # an older version's data dir, looser than today's
    with _umask(0o022), running_service(tmp_path / "run", data_dir=data) as service:
        with service.client() as client:
            answer = client.post("/api/audio", files={"file": ("a.mp3", recording, "audio/mpeg")})
        assert service.wait_for_job(answer.json()["job_id"])["state"] == "done"
        assert service.wait_for_log("data_dir.tightened", "mode=755")
        folders = {name: _mode(data / name) for name in ("", "files", "tmp")}
        files = {path.name: _mode(path) for path in data.iterdir() if path.is_file()}
        stored = {path.name: _mode(path) for path in (data / "files").iterdir()}
    assert folders == {"": 0o700, "files": 0o700, "tmp": 0o700}
    assert files == {
        "transcriber.db": 0o600,
        "transcriber.db-wal": 0o600,
        "transcriber.db-shm": 0o600,
        "transcriber.lock": 0o600,
        "transcriber.members": 0o600,
    }
    assert stored
    assert set(stored.values()) == {0o600}


def test_second_serve_on_the_same_data_dir_exits_2(tmp_path: Path) -> None:
    """A second serve on a data dir in use exits 2 with a clear message, touching nothing."""
    data = tmp_path / "data"
    with running_service(tmp_path / "first", data_dir=data) as first:
        # A staging file of the running service, which the second must not sweep.
        [own] = (data / "tmp").iterdir()
        staged = own / "transcriber-in-progress.ogg"
        staged.write_bytes(b"being written")
        code, stderr = start_failing(
            tmp_path / "second", config={"storage": {"data_dir": str(data)}}
        )
        assert code == 2
        assert f"the data dir is in use by process {first.pid}" in stderr
        assert "[storage] data_dir" in stderr
        assert "Traceback" not in stderr
        assert staged.read_bytes() == b"being written"
        assert httpx.get(f"{first.base_url}/health").status_code == 200
