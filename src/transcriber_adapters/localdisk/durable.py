"""Putting bytes under a final name whole or not at all, readable by the service's user only.

A temp name next to the destination, fsync, rename, fsync the folder. Stored
files are 0600 and the folders the stores make are 0700: only the service's
own user reads recordings.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import threading
from pathlib import Path

#: Mode of every file the stores write: the owner reads and writes, nobody else.
FILE_MODE = 0o600
#: Mode of every folder the stores make.
DIR_MODE = 0o700
#: Prefix of half-written files inside a store's folder; no stored name starts with a dot.
PARTIAL_PREFIX = ".tmp-"
#: Bytes read and written per slice of a copy; cancellation is noticed between slices.
CHUNK_SIZE = 1024 * 1024


class _Stopped(Exception):  # noqa: N818 - a signal inside a thread, never seen by callers
    """The copy was asked to stop; the caller is already propagating its cancellation."""


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
