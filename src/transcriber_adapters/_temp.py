"""Temporary and stored files on local disk, shared by the local file stores.

* ``staging_path``: a fresh file in a store's staging dir (``<data_dir>/tmp``
  in the service), removed on every exit; ``clear_staging_dir`` empties that
  dir at start-up of what a killed process left there (ADR 21).
* ``copy_into`` / ``move_into``: put bytes under a final name whole or not at
  all: a temp name next to the destination, fsync, rename, fsync the folder.
  Stored files are 0600, staging files too (``mkstemp``), and the folders the
  stores make are 0700: only the service's own user reads recordings.
* ``storage_errors``: the one place where ``OSError`` becomes a core error.
  Its text carries paths, so it is dropped (SPEC §9). A full disk or an
  exceeded quota is the service's condition (``DiskFull``), not the job's.

Names here never come from a sender: staging names are random, stored names
are checked ids and extensions.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import secrets
import shutil
import tempfile
import threading
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

from transcriber_core.errors import DiskFull, StorageUnavailable, TranscriberError

#: Prefix of staging files in a staging dir.
STAGING_PREFIX = "transcriber-"
#: Mode of every file the stores write: the owner reads and writes, nobody else.
FILE_MODE = 0o600
#: Mode of every folder the stores make.
DIR_MODE = 0o700
#: Prefix of half-written files inside a store's folder; no stored name starts with a dot.
PARTIAL_PREFIX = ".tmp-"
#: errno values that mean "no room": the service's condition, not the recording's.
NO_SPACE_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT})
#: Bytes read and written per slice of a copy; cancellation is noticed between slices.
CHUNK_SIZE = 1024 * 1024

_FILE_ID = re.compile(r"[A-Za-z0-9_-]{1,128}")
_EXTENSION = re.compile(r"(\.[a-z0-9]{1,10})?")


class _Stopped(Exception):  # noqa: N818 - a signal inside a thread, never seen by callers
    """The copy was asked to stop; the caller is already propagating its cancellation."""


def check_extension(extension: str) -> str:
    """``extension`` unchanged when it is "" or a dot and 1-10 of ``[a-z0-9]``; else ValueError."""
    if not _EXTENSION.fullmatch(extension):
        raise ValueError("an extension is a dot and 1 to 10 lower-case letters or digits")
    return extension


def stored_name(file_id: str, extension: str) -> str:
    """``<file_id><extension>``, refusing anything that could leave the store's folder."""
    if not _FILE_ID.fullmatch(file_id):
        raise ValueError("a file id is 1 to 128 URL-safe characters")
    return file_id + check_extension(extension)


@contextlib.asynccontextmanager
async def staging_path(directory: Path, extension: str) -> AsyncIterator[Path]:
    """A new empty file ``transcriber-<random><extension>`` in ``directory``, mode 0600.

    ``directory`` is made (0700) when missing. Whoever uses the file may
    write, replace or move it; whatever is at the path on exit is removed,
    however the block ends.
    """
    check_extension(extension)
    # Made in this thread, not in a worker: a cancellation between creating
    # the file and learning its name would leak it. mkstemp is one syscall,
    # and O_EXCL with mode 0600 keeps everyone else away from it; the folder
    # is there already but after a first start or a hand clean-up.
    with storage_errors():
        directory.mkdir(mode=DIR_MODE, parents=True, exist_ok=True)  # noqa: ASYNC240 - see above
        handle, name = tempfile.mkstemp(prefix=STAGING_PREFIX, suffix=extension, dir=directory)
        os.close(handle)
    path = Path(name)
    try:
        yield path
    finally:
        remove_now(path)


def clear_staging_dir(directory: Path) -> int:
    """Make ``directory`` (0700) and empty it of what a killed process left; how many entries.

    Only safe while no other process stages files there: the service holds
    the data dir's lock (``datadir.claim``) before calling it.
    """
    directory.mkdir(mode=DIR_MODE, parents=True, exist_ok=True)
    removed = 0
    for entry in directory.iterdir():
        # A folder is never made here by us; whatever one holds is a leftover too.
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry, ignore_errors=True)
        else:
            entry.unlink(missing_ok=True)
        removed += 1
    return removed


def remove_now(path: Path) -> None:
    """Unlink ``path`` if it is there, synchronously so no cancellation can skip it."""
    with storage_errors():
        path.unlink(missing_ok=True)


@contextlib.contextmanager
def storage_errors(missing: TranscriberError | None = None) -> Iterator[None]:
    """Turn ``OSError`` into ``StorageUnavailable`` (or ``missing`` for a missing file).

    ENOSPC and EDQUOT become ``DiskFull``: the job waits for space without
    spending an attempt (SPEC §17).

    The OS text names the path, so only the error's generic meaning
    survives, and the original is not chained (SPEC §9).
    """
    try:
        yield
    except FileNotFoundError:
        if missing is not None:
            raise missing from None
        raise StorageUnavailable("the file store could not find a file it expected") from None
    except OSError as exc:
        if exc.errno in NO_SPACE_ERRNOS:
            raise DiskFull(f"the file store has no space left: {os.strerror(exc.errno)}") from None
        reason = os.strerror(exc.errno) if exc.errno is not None else "unknown error"
        raise StorageUnavailable(f"the file store failed: {reason}") from None


def fsync_directory(directory: Path) -> None:
    """Make a rename or a new name in ``directory`` durable."""
    handle = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(handle)
    finally:
        os.close(handle)


def copy_into(source: Path, destination: Path, *, stop: threading.Event) -> int:
    """Copy ``source`` to ``destination`` whole or not at all; return the bytes written.

    Blocking: run it through ``in_thread`` with the same ``stop``. The bytes
    go to a ``.tmp-`` name in the destination's folder, are fsynced, and
    renamed over ``destination`` only when complete and not stopped; on any
    failure the temp file is removed and ``destination`` is left as it was.
    """
    partial = destination.parent / f"{PARTIAL_PREFIX}{secrets.token_hex(8)}"
    try:
        size = _write_synced(source, partial, stop)
        _check(stop)
        partial.replace(destination)
    except BaseException:
        with contextlib.suppress(OSError):
            partial.unlink(missing_ok=True)
        raise
    fsync_directory(destination.parent)
    return size


def _write_synced(source: Path, partial: Path, stop: threading.Event) -> int:
    """Copy ``source`` into the new file ``partial`` and fsync it; return the bytes written."""
    size = 0
    # Unbuffered reads return what is there, so a slow source (a pipe) still
    # lets us look at ``stop`` between slices.
    with source.open("rb", buffering=0) as reader:
        # Created 0600 in one call: there is no moment when others may open it.
        handle = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, FILE_MODE)
        with open(handle, "wb") as writer:  # noqa: PTH123 - Path.open takes no descriptor
            while chunk := reader.read(CHUNK_SIZE):
                _check(stop)
                writer.write(chunk)
                size += len(chunk)
            writer.flush()
            os.fsync(writer.fileno())
    return size


def _check(stop: threading.Event) -> None:
    if stop.is_set():
        raise _Stopped


def move_into(source: Path, destination: Path, *, stop: threading.Event) -> int:
    """Move ``source`` to ``destination`` whole or not at all; return its size.

    A rename when both are on one filesystem; otherwise a ``copy_into`` and,
    once the copy is in place, the source is removed. On failure the source
    is kept.
    """
    # A rename makes the name durable, not the bytes: sync them first. The
    # mode goes with the rename, so a source made elsewhere is made private.
    with source.open("rb") as reader:
        os.fchmod(reader.fileno(), FILE_MODE)
        os.fsync(reader.fileno())
        size = os.fstat(reader.fileno()).st_size
    try:
        source.replace(destination)
    except OSError as exc:
        if exc.errno != errno.EXDEV:
            raise
        size = copy_into(source, destination, stop=stop)
        source.unlink(missing_ok=True)
        return size
    fsync_directory(destination.parent)
    return size
