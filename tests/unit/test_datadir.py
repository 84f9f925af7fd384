"""The data dir: one serve and any workers, private modes, staging leftovers swept (ADR 21, 38)."""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from transcriber_adapters.datadir import (
    LOCK_NAME,
    MEMBERS_NAME,
    STAGING_NAME,
    DataDirInUse,
    claim,
    private_file,
    sweep_staging,
)
from transcriber_adapters.sqlite import SqliteJobRepository, SqliteLoginThrottle

#: A child that claims the data dir given as argv[1] (as serve: its sweep done, others may
#: join), says so, and holds it until stdin closes.
_HOLDER = (
    "import sys, pathlib\n"
    "from transcriber_adapters.datadir import claim\n"
    "claim(pathlib.Path(sys.argv[1])).share()\n"
    "print('held', flush=True)\n"
    "sys.stdin.read()\n"
)


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture
def holder(tmp_path: Path) -> Iterator[subprocess.Popen[str]]:
    """Another process holding the lock on ``tmp_path / "data"``."""
    with subprocess.Popen(
        [sys.executable, "-c", _HOLDER, str(tmp_path / "data")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    ) as process:
        try:
            assert process.stdout is not None
            assert process.stdout.readline() == "held\n"
            yield process
        finally:
            process.kill()


def test_claim_makes_a_private_dir(tmp_path: Path) -> None:
    """A new data dir is made 0700 with its lock file 0600."""
    lock = claim(tmp_path / "data")
    try:
        assert _mode(tmp_path / "data") == 0o700
        assert _mode(tmp_path / "data" / LOCK_NAME) == 0o600
        assert not lock.tightened
    finally:
        lock.release()


def test_claim_tightens_a_loose_dir(tmp_path: Path) -> None:
    """An existing 0755 data dir is made 0700, and the old mode is reported for the log."""
    data = tmp_path / "data"
    data.mkdir()
    data.chmod(0o755)
    lock = claim(data)
    try:
        assert _mode(data) == 0o700
        assert lock.tightened
        assert lock.previous_mode == 0o755
    finally:
        lock.release()


def test_second_process_is_refused(tmp_path: Path, holder: subprocess.Popen[str]) -> None:
    """While another process holds the data dir, claim raises DataDirInUse naming its pid."""
    with pytest.raises(DataDirInUse) as info:
        claim(tmp_path / "data")
    assert len(list((tmp_path / "data" / STAGING_NAME).iterdir())) == 1, "refused: made none"
    assert info.value.holder == holder.pid
    assert f"process {holder.pid}" in str(info.value)
    assert "[storage] data_dir" in str(info.value)


def test_lock_dies_with_its_process(tmp_path: Path, holder: subprocess.Popen[str]) -> None:
    """A SIGKILLed holder frees the data dir: a crash never needs a hand-removed lock file."""
    holder.send_signal(signal.SIGKILL)
    holder.wait()
    claim(tmp_path / "data").release()


def test_release_lets_the_next_claim_in(tmp_path: Path) -> None:
    """After release (a closed runtime) the data dir can be claimed again; twice is harmless."""
    first = claim(tmp_path / "data")
    with pytest.raises(DataDirInUse):
        claim(tmp_path / "data")
    first.release()
    first.release()
    claim(tmp_path / "data").release()


def test_private_file_creates_and_tightens(tmp_path: Path) -> None:
    """A new file is made 0600; an existing 0644 database and its WAL files are made 0600."""
    fresh = tmp_path / "fresh.db"
    private_file(fresh)
    assert _mode(fresh) == 0o600
    old = tmp_path / "old.db"
    for path in (old, Path(f"{old}-wal"), Path(f"{old}-shm")):
        path.write_bytes(b"")
        path.chmod(0o644)
    private_file(old)
    assert [_mode(p) for p in (old, Path(f"{old}-wal"), Path(f"{old}-shm"))] == [0o600] * 3


async def test_database_files_are_private(tmp_path: Path) -> None:
    """The SQLite database, its -wal and its -shm are 0600 even under a permissive umask."""
    path = tmp_path / "transcriber.db"
    old_umask = os.umask(0o022)
    try:
        repo = await SqliteJobRepository.open(path)
        try:
            await repo.count_by_state()
            modes = {path.name: _mode(path) for path in tmp_path.iterdir()}
        finally:
            await repo.close()
    finally:
        os.umask(old_umask)
    assert modes == {
        "transcriber.db": 0o600,
        "transcriber.db-wal": 0o600,
        "transcriber.db-shm": 0o600,
    }


async def test_login_throttle_makes_the_database_private(tmp_path: Path) -> None:
    """Whichever SQLite adapter opens the file first, it is made 0600."""
    path = tmp_path / "transcriber.db"
    old_umask = os.umask(0o022)
    try:
        logins = await SqliteLoginThrottle.open(path)
        await logins.close()
    finally:
        os.umask(old_umask)
    assert _mode(path) == 0o600


def test_claim_makes_a_locked_staging_folder_of_its_own(tmp_path: Path) -> None:
    """Each claim gets its own private folder in tmp/, removed again at release."""
    lock = claim(tmp_path / "data")
    try:
        assert lock.staging.parent == tmp_path / "data" / STAGING_NAME
        assert _mode(lock.staging) == 0o700
        assert _mode(lock.staging.parent) == 0o700
    finally:
        lock.release()
    assert not lock.staging.exists()


def test_workers_share_the_data_dir_with_serve(
    tmp_path: Path, holder: subprocess.Popen[str]
) -> None:
    """While a serve holds the data dir, workers (no intake) join it, each with its own folder."""
    first = claim(tmp_path / "data", intake=False)
    second = claim(tmp_path / "data", intake=False)
    try:
        assert not first.alone
        assert not second.alone
        assert first.staging != second.staging
    finally:
        first.release()
        second.release()


def test_a_lone_worker_is_alone(tmp_path: Path) -> None:
    """The first process on a data dir is alone until it shares; the next one is not."""
    first = claim(tmp_path / "data", intake=False)
    assert first.alone
    first.share()
    second = claim(tmp_path / "data")
    try:
        assert not second.alone
    finally:
        second.release()
        first.release()


def _wait_until_a_flock_waits_on(path: Path, timeout: float = 10.0) -> None:
    """Poll /proc/locks until some process waits for a flock on ``path``'s inode."""
    inode = path.stat().st_ino
    deadline = time.monotonic() + timeout
    while True:
        for line in Path("/proc/locks").read_text().splitlines():
            fields = line.split()
            if "->" in fields and any(f.endswith(f":{inode}") for f in fields):
                return
        assert time.monotonic() < deadline, "nobody waited for the lock"
        time.sleep(0.01)


def test_a_process_starting_while_another_sweeps_waits_for_it(tmp_path: Path) -> None:
    """A claim made while the first process is alone (sweeping) returns only after it shares."""
    data = tmp_path / "data"
    first = claim(data)
    assert first.alone
    shared = threading.Event()
    joined: dict[str, Any] = {}

    def join() -> None:
        lock = claim(data, intake=False)
        joined["after_share"] = shared.is_set()
        joined["lock"] = lock

    thread = threading.Thread(target=join)
    thread.start()
    try:
        _wait_until_a_flock_waits_on(data / MEMBERS_NAME)
        shared.set()
        first.share()
    finally:
        thread.join(10)
    try:
        assert joined["after_share"]
        assert not joined["lock"].alone
    finally:
        joined["lock"].release()
        first.release()


def test_sweep_keeps_live_folders_and_removes_dead_ones(
    tmp_path: Path, holder: subprocess.Popen[str]
) -> None:
    """With a live neighbour, a sweep removes dead processes' folders only; loose files stay."""
    data = tmp_path / "data"
    [live] = list((data / STAGING_NAME).iterdir())
    (live / "transcriber-in-progress.ogg").write_bytes(b"being written")
    dead = data / STAGING_NAME / "0123456789abcdef"
    dead.mkdir()
    (dead / "transcriber-left.ogg").write_bytes(b"x" * 1000)
    loose = data / STAGING_NAME / "transcriber-old-layout.ogg"
    loose.write_bytes(b"y")
    lock = claim(data, intake=False)
    try:
        assert sweep_staging(lock) == 1
        assert not dead.exists()
        assert (live / "transcriber-in-progress.ogg").read_bytes() == b"being written"
        assert loose.exists(), "a loose file may be another version's: only removed when alone"
    finally:
        lock.release()


def test_sweep_alone_removes_every_leftover(tmp_path: Path) -> None:
    """Alone on the data dir, a sweep removes loose files, folders and links, never the target."""
    data = tmp_path / "data"
    staging = data / STAGING_NAME
    staging.mkdir(parents=True)
    (staging / "transcriber-abc.ogg").write_bytes(b"x" * 1000)
    (staging / "nested").mkdir()
    (staging / "nested" / "part").write_bytes(b"y")
    (staging / ".new-0011").mkdir()
    (staging / "link").symlink_to(tmp_path)
    lock = claim(data)
    try:
        assert lock.alone
        assert sweep_staging(lock) == 4
        assert list(staging.iterdir()) == [lock.staging]
        assert tmp_path.is_dir()
    finally:
        lock.release()
