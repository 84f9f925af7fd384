"""The local-folder file store beyond its contract: crash safety, naming, error texts."""

from __future__ import annotations

import asyncio
import errno
import os
import stat
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from tests.support.processes import open_fifo_writer
from transcriber_adapters import localdisk
from transcriber_adapters.filesystem import FilesystemFileStore
from transcriber_core.errors import DiskFull, FileNotFound, ServiceCondition, StorageUnavailable

NOW = datetime(2026, 1, 2, tzinfo=UTC)
FILE_ID = "c3RvcmVkLWZpbGUtaWQtMDE"


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return tmp_path / "files"


@pytest.fixture
def store(root: Path) -> FilesystemFileStore:
    return FilesystemFileStore(root, staging_dir=root.parent / "tmp")


@pytest.fixture
def system_temp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Point the system temp dir at an empty folder for the test."""
    folder = tmp_path / "system-temp"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    return folder


@pytest.fixture
def source(tmp_path: Path) -> Path:
    path = tmp_path / "upload.bin"
    path.write_bytes(b"recording bytes" * 1000)
    return path


def _fail_fsync(monkeypatch: pytest.MonkeyPatch, *, on: Callable[[int], bool]) -> None:
    """Make ``os.fsync`` fail with a full disk for the descriptors ``on`` picks."""
    real = os.fsync

    def fsync(handle: int) -> None:
        if on(handle):
            # The OS error names the path; the store must not pass it on.
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), "/secret/path/name.mp3")
        real(handle)

    monkeypatch.setattr(os, "fsync", fsync)


def _is_partial(handle: int) -> bool:
    return Path(f"/proc/self/fd/{handle}").readlink().name.startswith(localdisk.PARTIAL_PREFIX)


def _cross_device(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make renames between folders fail as they do across filesystems."""
    real = os.replace

    def replace(src: str | os.PathLike[str], dst: str | os.PathLike[str]) -> None:
        if Path(src).parent != Path(dst).parent:
            raise OSError(errno.EXDEV, os.strerror(errno.EXDEV))
        real(src, dst)

    monkeypatch.setattr(os, "replace", replace)


async def test_stored_under_its_name_and_nothing_else(
    store: FilesystemFileStore, root: Path, source: Path
) -> None:
    """After a put the folder holds exactly ``<id><ext>``: no temp file, no sender name."""
    record = await store.put(FILE_ID, ".mp3", source, now=NOW)
    assert sorted(p.name for p in root.iterdir()) == [f"{FILE_ID}.mp3"]
    assert (root / record.name).read_bytes() == source.read_bytes()


async def test_put_creates_the_folder(tmp_path: Path, source: Path) -> None:
    """A store on a folder that does not exist yet makes it on the first put."""
    store = FilesystemFileStore(tmp_path / "a" / "b", staging_dir=tmp_path / "tmp")
    record = await store.put(FILE_ID, "", source, now=NOW)
    assert (tmp_path / "a" / "b" / record.name).is_file()


async def test_move_on_one_filesystem_renames(
    store: FilesystemFileStore, root: Path, source: Path
) -> None:
    """A move within one filesystem is a rename: the same inode, no second copy written."""
    inode = source.stat().st_ino
    record = await store.put(FILE_ID, ".mp3", source, now=NOW, move=True)
    assert (root / record.name).stat().st_ino == inode


async def test_working_copy_is_the_stored_file(
    store: FilesystemFileStore, root: Path, source: Path
) -> None:
    """The working copy is the stored file itself, not a copy in the temp dir."""
    record = await store.put(FILE_ID, ".mp3", source, now=NOW)
    async with store.working_copy(record) as path:
        assert path == root / record.name


async def test_cross_device_move_copies_then_removes_source(
    store: FilesystemFileStore,
    root: Path,
    source: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """When a rename crosses filesystems, the bytes are copied in and the source removed."""
    data = source.read_bytes()
    _cross_device(monkeypatch)
    record = await store.put(FILE_ID, ".mp3", source, now=NOW, move=True)
    assert not source.exists()
    assert record.size == len(data)
    assert [p.name for p in root.iterdir()] == [record.name]
    assert (root / record.name).read_bytes() == data


async def test_failed_cross_device_move_keeps_source(
    store: FilesystemFileStore,
    root: Path,
    source: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A cross-filesystem move that fails mid-copy keeps the source and leaves no stub."""
    data = source.read_bytes()
    _cross_device(monkeypatch)
    _fail_fsync(monkeypatch, on=_is_partial)
    with pytest.raises(DiskFull):
        await store.put(FILE_ID, ".mp3", source, now=NOW, move=True)
    assert source.read_bytes() == data
    assert list(root.iterdir()) == []


async def test_failed_copy_leaves_nothing(
    store: FilesystemFileStore,
    root: Path,
    source: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A copy failing at fsync (disk full) leaves no file and no temp name in the folder."""
    _fail_fsync(monkeypatch, on=_is_partial)
    with pytest.raises(DiskFull):
        await store.put(FILE_ID, ".mp3", source, now=NOW)
    assert list(root.iterdir()) == []
    assert source.exists()


async def test_failed_replace_keeps_the_old_file(
    store: FilesystemFileStore,
    root: Path,
    source: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A put that fails over an existing id leaves the earlier file whole."""
    first = await store.put(FILE_ID, ".mp3", source, now=NOW)
    newer = tmp_path / "newer.bin"
    newer.write_bytes(b"newer")
    _fail_fsync(monkeypatch, on=_is_partial)
    with pytest.raises(DiskFull):
        await store.put(FILE_ID, ".mp3", newer, now=NOW)
    assert [p.name for p in root.iterdir()] == [first.name]
    assert (root / first.name).read_bytes() == source.read_bytes()


async def test_storage_error_names_no_path(
    store: FilesystemFileStore,
    root: Path,
    source: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A storage error says what went wrong in our words, without the OS's path (Privacy)."""
    _fail_fsync(monkeypatch, on=_is_partial)
    with pytest.raises(DiskFull) as info:
        await store.put(FILE_ID, ".mp3", source, now=NOW)
    text = str(info.value)
    assert "No space left on device" in text
    for secret in ("/secret/path", str(root), FILE_ID, source.name):
        assert secret not in text
    assert info.value.__cause__ is None
    assert info.value.__suppress_context__


async def test_unusable_root_is_storage_unavailable(tmp_path: Path, source: Path) -> None:
    """A root that is a file, not a folder, raises StorageUnavailable naming no path."""
    root = tmp_path / "not-a-folder"
    root.write_bytes(b"")
    store = FilesystemFileStore(root, staging_dir=tmp_path / "tmp")
    with pytest.raises(StorageUnavailable) as info:
        await store.put(FILE_ID, ".mp3", source, now=NOW)
    assert str(tmp_path) not in str(info.value)


async def test_missing_source_is_storage_unavailable(
    store: FilesystemFileStore, tmp_path: Path
) -> None:
    """Putting a source that is gone is a storage failure (retried), not a missing record."""
    with pytest.raises(StorageUnavailable):
        await store.put(FILE_ID, ".mp3", tmp_path / "gone.bin", now=NOW, move=True)


async def test_cancelled_copy_leaves_nothing(
    store: FilesystemFileStore, root: Path, tmp_path: Path
) -> None:
    """A put cancelled mid-copy waits for its thread and removes the half-written file."""
    fifo = tmp_path / "slow-upload"
    os.mkfifo(fifo)
    task = asyncio.create_task(store.put(FILE_ID, ".mp3", fifo, now=NOW))
    writer = await open_fifo_writer(fifo, task)
    try:
        # A pipe holds 64 KiB: this returns only once the store has read most of it.
        await asyncio.to_thread(writer.write, b"x" * (3 * 1024 * 1024))
        partial = [p.name for p in root.iterdir()]
        assert len(partial) == 1
        assert partial[0].startswith(localdisk.PARTIAL_PREFIX)
        task.cancel()
    finally:
        writer.close()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert list(root.iterdir()) == []


@pytest.mark.parametrize("file_id", ["../escape", "a/b", ".hidden", "", "x" * 129, "ид"])
async def test_unsafe_ids_are_refused(
    store: FilesystemFileStore, source: Path, file_id: str
) -> None:
    """An id that could leave the folder or hide as a temp name is refused before any I/O."""
    with pytest.raises(ValueError, match="file id"):
        await store.put(file_id, ".mp3", source, now=NOW)


@pytest.mark.parametrize("extension", ["mp3", ".MP3", "./../x", ".averyverylongext", ".m p3"])
async def test_unclean_extensions_are_refused(
    store: FilesystemFileStore, source: Path, extension: str
) -> None:
    """Only extensions made by ``extension_of`` reach a stored or staging name."""
    with pytest.raises(ValueError, match="extension"):
        await store.put(FILE_ID, extension, source, now=NOW)
    with pytest.raises(ValueError, match="extension"):
        async with store.staging(extension):
            pass


async def test_staging_name_is_ours(store: FilesystemFileStore, system_temp: Path) -> None:
    """A staging file is named ``transcriber-<random><ext>``, private to its owner."""
    async with store.staging(".ogg") as path:
        assert path.name.startswith(localdisk.STAGING_PREFIX)
        assert path.suffix == ".ogg"
        assert path.stat().st_mode & 0o077 == 0


async def test_missing_file_error_names_no_path(store: FilesystemFileStore, root: Path) -> None:
    """FileNotFound from the store is our default text, without the root or name."""
    record = await store.put(FILE_ID, ".mp3", _write(root.parent / "s.bin"), now=NOW)
    await store.delete(record)
    with pytest.raises(FileNotFound) as info:
        async with store.working_copy(record):
            pass
    assert str(root) not in str(info.value)
    assert record.name not in str(info.value)


def _write(path: Path) -> Path:
    path.write_bytes(b"abc")
    return path


async def test_stale_partials_are_swept_and_nothing_else(tmp_path: Path) -> None:
    """Start-up removes half-written files a killed process left, not fresh ones or stored files."""
    root = tmp_path / "files"
    root.mkdir()
    store = FilesystemFileStore(root, staging_dir=tmp_path / "tmp")
    two_hours_ago = time.time() - 2 * 3600
    stale, fresh, stored = root / ".tmp-0123abcd", root / ".tmp-4567ef01", root / "abc.mp3"
    for path in (stale, fresh, stored):
        path.write_bytes(b"x")
    os.utime(stale, (two_hours_ago, two_hours_ago))
    os.utime(stored, (two_hours_ago, two_hours_ago))
    assert await store.remove_stale_partials(older_than=timedelta(hours=1)) == 1
    assert sorted(p.name for p in root.iterdir()) == [".tmp-4567ef01", "abc.mp3"]


async def test_sweeping_a_missing_root_is_harmless(tmp_path: Path) -> None:
    """A first start, before any file was stored, sweeps nothing and does not fail."""
    store = FilesystemFileStore(tmp_path / "not-yet", staging_dir=tmp_path / "tmp")
    assert await store.remove_stale_partials(older_than=timedelta(hours=1)) == 0


@pytest.mark.parametrize("code", [errno.ENOSPC, errno.EDQUOT])
def test_no_space_is_the_service_condition(code: int) -> None:
    """A full disk or a spent quota is the service's condition (the job waits), in our words."""
    with pytest.raises(DiskFull) as info, localdisk.storage_errors():
        raise OSError(code, os.strerror(code), "/secret/path/name.mp3")
    assert isinstance(info.value, ServiceCondition)
    assert info.value.code == "disk_full"
    assert "/secret" not in str(info.value)
    assert info.value.__cause__ is None


def test_other_os_errors_stay_transient() -> None:
    """An I/O error is not a full disk: it stays StorageUnavailable, retried with attempts."""
    with pytest.raises(StorageUnavailable), localdisk.storage_errors():
        raise OSError(errno.EIO, os.strerror(errno.EIO), "/secret/path/name.mp3")


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


async def test_stored_files_are_private(tmp_path: Path, source: Path) -> None:
    """A copied or moved file is stored 0600 in a 0700 folder, whatever the source's mode."""
    root = tmp_path / "data" / "files"
    store = FilesystemFileStore(root, staging_dir=tmp_path / "data" / "tmp")
    source.chmod(0o644)
    copied = await store.put(FILE_ID, ".mp3", source, now=NOW)
    assert _mode(root) == 0o700
    assert _mode(root / copied.name) == 0o600
    moved = await store.put("bW92ZWQtZmlsZS1pZC0wMDE", ".mp3", source, now=NOW, move=True)
    assert _mode(root / moved.name) == 0o600


async def test_staged_upload_moves_in_private(store: FilesystemFileStore, root: Path) -> None:
    """A staging file moved into the store keeps its 0600: no window where others may read."""
    async with store.staging(".ogg") as path:
        path.write_bytes(b"converted")
        record = await store.put(FILE_ID, ".ogg", path, now=NOW, move=True)
    assert _mode(root / record.name) == 0o600
