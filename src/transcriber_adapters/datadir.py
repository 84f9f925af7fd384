"""The data dir on local disk: one process at a time, readable by its owner only (ADR 21).

* ``claim``: make the dir (0700, or tighten a looser one we own) and take an
  exclusive ``flock`` on ``transcriber.lock`` inside it for as long as the
  returned ``DataDirLock`` is held; a second process gets ``DataDirInUse``
  before it has touched anything else there.
* ``private_file``: make a file (the database) 0600 before SQLite opens it,
  so its ``-wal`` and ``-shm`` files, which SQLite creates with the
  database's own mode, are private too.

The lock is advisory and local: it keeps a second ``serve`` off a data dir on
this host. It is not for network filesystems, where ``flock`` may not reach
other hosts (scaling out is for PostgreSQL and Object Storage instead).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import stat
from pathlib import Path

import attrs

from transcriber_adapters.localdisk import DIR_MODE, FILE_MODE

#: The lock file inside the data dir.
LOCK_NAME = "transcriber.lock"


class DataDirInUse(Exception):  # noqa: N818 - reads as what it reports
    """Another process holds the data dir's lock; this one must not start on it."""

    def __init__(self, holder: int | None) -> None:
        who = f"process {holder}" if holder else "another process"
        super().__init__(
            f"the data dir is in use by {who}: one transcriber per data dir; "
            "stop the other one or give this one its own [storage] data_dir"
        )
        #: The pid written by the holder, when it could be read.
        self.holder = holder


@attrs.define
class DataDirLock:
    """The held lock on a data dir; ``release`` (or process exit) frees it."""

    #: True when the data dir existed with group or other permissions and was made 0700.
    tightened: bool
    #: The data dir's mode bits before ``claim``, for the log; None when it was made now.
    previous_mode: int | None
    _handle: int | None

    def release(self) -> None:
        """Unlock and close the lock file; a second call does nothing."""
        handle, self._handle = self._handle, None
        if handle is not None:
            os.close(handle)


def claim(root: Path) -> DataDirLock:
    """Make ``root`` private and lock it for this process; ``DataDirInUse`` when taken.

    The lock file is opened close-on-exec, so a child (ffmpeg) never inherits
    it and a killed service's lock goes with its process.
    """
    previous_mode, tightened = private_dir(root)
    handle = os.open(root / LOCK_NAME, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, FILE_MODE)
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = _read_pid(handle)
        os.close(handle)
        raise DataDirInUse(holder) from None
    except BaseException:
        os.close(handle)
        raise
    # For the message a second process prints; the lock, not the pid, is what counts.
    os.ftruncate(handle, 0)
    os.pwrite(handle, f"{os.getpid()}\n".encode(), 0)
    return DataDirLock(tightened=tightened, previous_mode=previous_mode, handle=handle)


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
