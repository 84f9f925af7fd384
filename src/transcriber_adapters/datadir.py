"""The data dir on local disk: who may use it, its private modes, and what a killed process left.

Several processes on one host may share a data dir (ADR 38): one
``transcriber serve`` and any number of ``transcriber worker``. Three
``flock`` locks say who is there:

* ``transcriber.lock``: exclusive, held by ``serve`` only (``intake=True``).
  A second ``serve`` gets ``DataDirInUse`` before it has touched anything.
* ``transcriber.members``: every process holds it shared for its life. A
  starting process first tries it exclusively: when that succeeds it is
  ``alone`` and may sweep what any dead process left (partial files of any
  age, loose staging files) until it calls ``DataDirLock.share``.
* ``tmp/<random>/``: each process's own staging folder, locked exclusively
  by its owner (a lock on the folder itself). ``sweep_staging`` removes the
  folders whose lock it can take: their owners are dead, whoever else runs.

``private_file`` makes a file (the database) 0600 before SQLite opens it,
so its ``-wal`` and ``-shm`` files, which SQLite creates with the
database's own mode, are private too.

The locks are advisory and local: they are not for network filesystems,
where ``flock`` may not reach other hosts (scaling out is for PostgreSQL
and Object Storage instead, each host with its own data dir).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import secrets
import shutil
import stat
from pathlib import Path

import attrs

from transcriber_adapters.localdisk import DIR_MODE, FILE_MODE

#: The lock file of ``serve``, the one intake process a data dir may have.
LOCK_NAME = "transcriber.lock"
#: The lock file every process on the data dir holds shared.
MEMBERS_NAME = "transcriber.members"
#: The staging folder inside the data dir: one folder per process in it (ADR 21, 38).
STAGING_NAME = "tmp"
#: A staging folder being made: not yet locked by its owner, so never swept by a neighbour.
_NEW_PREFIX = ".new-"


class DataDirInUse(Exception):  # noqa: N818 - reads as what it reports
    """Another ``serve`` holds the data dir's lock; this one must not start on it."""

    def __init__(self, holder: int | None) -> None:
        who = f"process {holder}" if holder else "another process"
        super().__init__(
            f"the data dir is in use by {who}: one transcriber serve per data dir; "
            "stop the other one, give this one its own [storage] data_dir, "
            "or run more steps with transcriber worker"
        )
        #: The pid written by the holder, when it could be read.
        self.holder = holder


@attrs.define
class DataDirLock:
    """The held locks on a data dir; ``release`` (or process exit) frees them."""

    #: True when the data dir existed with group or other permissions and was made 0700.
    tightened: bool
    #: The data dir's mode bits before ``claim``, for the log; None when it was made now.
    previous_mode: int | None
    #: No other process was on the data dir at ``claim``: until ``share``, nobody else can be.
    alone: bool
    #: This process's own staging folder (``<data_dir>/tmp/<random>``), locked while held.
    staging: Path
    _members: int | None
    _handles: list[int] = attrs.field(factory=list)

    def share(self) -> None:
        """Let other processes join: the sweeps that needed this process alone are done."""
        if self._members is not None and self.alone:
            # A downgrade is not atomic: a process starting in between may find
            # the data dir free and sweep as if alone. It then finds this
            # process's staging folder locked, and nothing else of ours exists yet.
            fcntl.flock(self._members, fcntl.LOCK_SH)

    def release(self) -> None:
        """Remove this process's staging folder and unlock all; a second call does nothing."""
        handles, self._handles = self._handles, []
        if not handles:
            return
        shutil.rmtree(self.staging, ignore_errors=True)
        self._members = None
        for handle in reversed(handles):
            os.close(handle)


def claim(root: Path, *, intake: bool = True) -> DataDirLock:
    """Make ``root`` private, join its processes and make this one's staging folder.

    ``intake`` (``serve``) also takes the exclusive lock: ``DataDirInUse``
    when another ``serve`` holds it. Every lock file is opened close-on-exec,
    so a child (ffmpeg) never inherits one and a killed process's locks go
    with it.
    """
    previous_mode, tightened = private_dir(root)
    handles: list[int] = []
    try:
        if intake:
            handles.append(_claim_intake(root / LOCK_NAME))
        members = _open_lock_file(root / MEMBERS_NAME)
        handles.append(members)
        alone = _try_lock(members, fcntl.LOCK_EX)
        if not alone:
            # Waits only while a process that started alone sweeps.
            fcntl.flock(members, fcntl.LOCK_SH)
        staging, handle = _own_staging(root / STAGING_NAME)
        handles.append(handle)
    except BaseException:
        for handle in reversed(handles):
            os.close(handle)
        raise
    return DataDirLock(
        tightened=tightened,
        previous_mode=previous_mode,
        alone=alone,
        staging=staging,
        members=members,
        handles=handles,
    )


def sweep_staging(lock: DataDirLock) -> int:
    """Remove what dead processes left in the staging dir; how many entries went.

    A folder whose lock can be taken has no live owner; loose files and
    folders being made are only removed while this process is ``alone``.
    """
    removed = 0
    for entry in lock.staging.parent.iterdir():
        if entry == lock.staging:
            continue
        if entry.is_dir() and not entry.is_symlink() and not entry.name.startswith(_NEW_PREFIX):
            if _remove_if_dead(entry):
                removed += 1
        elif lock.alone:
            _remove(entry)
            removed += 1
    return removed


def _claim_intake(path: Path) -> int:
    """The exclusive lock of the one ``serve``, with its pid written for the next one's message."""
    handle = _open_lock_file(path)
    if not _try_lock(handle, fcntl.LOCK_EX):
        holder = _read_pid(handle)
        os.close(handle)
        raise DataDirInUse(holder)
    try:
        # For the message a second process prints; the lock, not the pid, is what counts.
        os.ftruncate(handle, 0)
        os.pwrite(handle, f"{os.getpid()}\n".encode(), 0)
    except BaseException:
        os.close(handle)
        raise
    return handle


def _own_staging(parent: Path) -> tuple[Path, int]:
    """A new staging folder in ``parent``, locked by this process; its path and lock handle.

    Made under a ``.new-`` name and renamed once locked, so a neighbour's
    sweep never sees it unlocked under its final name.
    """
    private_dir(parent)
    name = secrets.token_hex(8)
    fresh = parent / f"{_NEW_PREFIX}{name}"
    fresh.mkdir(mode=DIR_MODE)
    handle = os.open(fresh, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        final = parent / name
        fresh.rename(final)
    except BaseException:
        os.close(handle)
        shutil.rmtree(fresh, ignore_errors=True)
        raise
    return final, handle


def _remove_if_dead(folder: Path) -> bool:
    """Remove a staging folder whose owner is gone; False when a live process holds it."""
    try:
        handle = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except FileNotFoundError:
        return False
    try:
        if not _try_lock(handle, fcntl.LOCK_EX):
            return False
        shutil.rmtree(folder, ignore_errors=True)
        return True
    finally:
        os.close(handle)


def _remove(entry: Path) -> None:
    if entry.is_dir() and not entry.is_symlink():
        shutil.rmtree(entry, ignore_errors=True)
    else:
        entry.unlink(missing_ok=True)


def _open_lock_file(path: Path) -> int:
    return os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, FILE_MODE)


def _try_lock(handle: int, kind: int) -> bool:
    """Take ``kind`` on ``handle`` without waiting; False when someone else holds it."""
    try:
        fcntl.flock(handle, kind | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def private_dir(path: Path) -> tuple[int | None, bool]:
    """Make ``path`` 0700, or drop group and other bits of an existing one we own.

    Returns the mode bits it had (None when made now) and whether they were
    changed. A folder owned by another user is left as it is.
    """
    try:
        path.mkdir(mode=DIR_MODE, parents=True)
    except FileExistsError:
        pass
    else:
        return None, False
    info = path.stat()
    mode = stat.S_IMODE(info.st_mode)
    if mode & 0o077 and info.st_uid == os.geteuid():
        path.chmod(mode & ~0o077)
        return mode, True
    return mode, False


def private_file(path: Path) -> None:
    """Create ``path`` empty with mode 0600, or make an existing one (and its WAL files) 0600."""
    with contextlib.suppress(FileExistsError):
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, FILE_MODE))
    for name in (path, Path(f"{path}-wal"), Path(f"{path}-shm")):
        with contextlib.suppress(FileNotFoundError):
            if stat.S_IMODE(name.stat().st_mode) & 0o077:
                name.chmod(FILE_MODE)


def _read_pid(handle: int) -> int | None:
    """The pid the holder wrote, or None when it is not (yet) there."""
    try:
        text = os.pread(handle, 32, 0).decode("ascii").strip()
        return int(text) if text else None
    except (OSError, ValueError):
        return None
