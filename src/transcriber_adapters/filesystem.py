"""The file store on a local folder: one file per record, ``<root>/<id><extension>``."""

from __future__ import annotations

import contextlib
import functools
import stat
import threading
import time
from collections.abc import AsyncIterator, Sequence
from contextlib import AbstractAsyncContextManager
from datetime import datetime, timedelta
from pathlib import Path

from transcriber_adapters._threads import close, in_thread
from transcriber_adapters.localdisk import (
    CHUNK_SIZE,
    DIR_MODE,
    PARTIAL_PREFIX,
    copy_into,
    move_into,
    staging_folder,
    staging_path,
    storage_errors,
    stored_name,
)
from transcriber_core.entities import FileRecord, Location
from transcriber_core.errors import FileNotFound, StorageUnavailable


class FilesystemFileStore:
    """Files under ``root``, each written to a temp name, fsynced and renamed into place.

    A file appears whole or not at all: an interrupted ``put`` (an error or a
    cancellation) removes its ``.tmp-`` file before it returns. A cancellation
    that arrives after the rename leaves the whole file in place, with no
    record; the retried step puts the same id again and replaces it. The working
    copy of a record is the stored file itself, handed out read-only.
    Stored files are 0600 in a 0700 folder. Staging files go to
    ``staging_dir``; on the same filesystem as ``root`` (the service puts both
    in the data dir) a staged upload moves in by a rename, never a copy.
    Blocking calls run in threads; errors never name a path (reference: Privacy).
    """

    def __init__(self, root: Path, *, staging_dir: Path) -> None:
        self._root = root
        self._staging_dir = staging_dir

    @property
    def location(self) -> Location:
        """Bytes live on this machine's disk."""
        return Location.LOCAL

    def staging(self, extension: str) -> AbstractAsyncContextManager[Path]:
        """A fresh 0600 file in the staging dir, removed on exit if still there."""
        return staging_path(self._staging_dir, extension)

    def staging_folder(self) -> AbstractAsyncContextManager[Path]:
        """A fresh 0700 folder in the staging dir, removed on exit with all it holds."""
        return staging_folder(self._staging_dir)

    async def put(
        self, file_id: str, extension: str, source: Path, *, now: datetime, move: bool = False
    ) -> FileRecord:
        """Store ``source`` as ``<root>/<file_id><extension>``, replacing a file of that name."""
        destination = self._root / stored_name(file_id, extension)
        stop = threading.Event()
        with storage_errors(missing=StorageUnavailable("the file to store is missing")):
            size = await in_thread(self._put, source, destination, move, stop, stop=stop)
        return FileRecord(
            id=file_id, location=Location.LOCAL, size=size, extension=extension, created=now
        )

    def _put(self, source: Path, destination: Path, move: bool, stop: threading.Event) -> int:
        self._root.mkdir(mode=DIR_MODE, parents=True, exist_ok=True)
        if move:
            return move_into(source, destination, stop=stop)
        return copy_into(source, destination, stop=stop)

    @contextlib.asynccontextmanager
    async def working_copy(self, record: FileRecord) -> AsyncIterator[Path]:
        """The stored file itself; callers only read it."""
        path = self._path(record)
        if not await self._exists(path):
            raise FileNotFound
        yield path

    async def open(self, record: FileRecord) -> AsyncIterator[bytes]:
        """The stored bytes, a mebibyte at a time."""
        path = self._path(record)
        with storage_errors(missing=FileNotFound()):
            reader = await in_thread(path.open, "rb", release=close)
        try:
            while True:
                with storage_errors():
                    chunk = await in_thread(reader.read, CHUNK_SIZE)
                if not chunk:
                    return
                yield chunk
        finally:
            reader.close()

    async def open_range(
        self, record: FileRecord, *, start: int, stop: int
    ) -> AsyncIterator[bytes]:
        """The stored bytes from ``start`` to ``stop``: a seek, then a mebibyte at a time."""
        if not 0 <= start < stop:
            raise ValueError("a range runs from 0 <= start to a larger stop")
        path = self._path(record)
        with storage_errors(missing=FileNotFound()):
            reader = await in_thread(path.open, "rb", release=close)
        try:
            with storage_errors():
                await in_thread(reader.seek, start)
            left = stop - start
            while left > 0:
                with storage_errors():
                    chunk = await in_thread(reader.read, min(CHUNK_SIZE, left))
                if not chunk:
                    return
                left -= len(chunk)
                yield chunk
        finally:
            reader.close()

    async def delete(self, record: FileRecord) -> None:
        """Remove the stored file; nothing happens when it is already gone."""
        path = self._path(record)
        with storage_errors():
            await in_thread(functools.partial(path.unlink, missing_ok=True))

    async def delete_many(self, records: Sequence[FileRecord]) -> None:
        """Remove the stored files in one trip to a thread; those already gone are skipped."""
        paths = [self._path(record) for record in records]
        with storage_errors():
            await in_thread(_unlink_all, paths)

    async def exists(self, record: FileRecord) -> bool:
        """True when the stored file is there."""
        return await self._exists(self._path(record))

    async def _exists(self, path: Path) -> bool:
        with storage_errors():
            return await in_thread(_is_file, path)

    def _path(self, record: FileRecord) -> Path:
        return self._root / stored_name(record.id, record.extension)

    async def remove_stale_partials(self, *, older_than: timedelta) -> int:
        """Delete ``.tmp-`` files that a killed process left half-written; how many.

        Only files untouched for ``older_than`` go, so a put still running in
        another process sharing the data dir keeps its file.
        """
        with storage_errors():
            return await in_thread(_remove_stale_partials, self._root, older_than)


def _remove_stale_partials(root: Path, older_than: timedelta) -> int:
    if not root.is_dir():
        return 0
    cutoff = time.time() - older_than.total_seconds()
    removed = 0
    for path in root.glob(f"{PARTIAL_PREFIX}*"):
        with contextlib.suppress(FileNotFoundError):
            if path.stat().st_mtime < cutoff:
                path.unlink()
                removed += 1
    return removed


def _is_file(path: Path) -> bool:
    """True for a regular file; False when absent; other OS errors propagate."""
    try:
        return stat.S_ISREG(path.stat().st_mode)
    except (FileNotFoundError, NotADirectoryError):
        return False


def _unlink_all(paths: list[Path]) -> None:
    for path in paths:
        path.unlink(missing_ok=True)
