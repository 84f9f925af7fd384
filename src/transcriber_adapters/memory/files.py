"""A file store that keeps bytes in a dict; working copies are real temp files."""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import AsyncIterator, Sequence
from contextlib import AbstractAsyncContextManager
from datetime import datetime
from pathlib import Path

import attrs

from transcriber_adapters._threads import in_thread
from transcriber_adapters.localdisk import staging_folder, staging_path, storage_errors, stored_name
from transcriber_core.entities import FileRecord, Location
from transcriber_core.errors import FileNotFound, StorageUnavailable

#: Bytes per chunk that ``open`` yields.
CHUNK_SIZE = 64 * 1024


@attrs.frozen(kw_only=True)
class FileCall:
    """One call made on a MemoryFileStore."""

    #: The method: "put", "working_copy", "open", "open_range", "delete" or "exists".
    method: str
    #: The stored name it was about.
    name: str


class MemoryFileStore:
    """Whole files in memory under their stored names, for demos and tests.

    ``put`` reads the source (and with ``move`` removes it); ``working_copy``
    writes the bytes to a staging file that is removed after the block, on
    every exit. Staging files go to ``staging_dir``, by default the system
    temp dir (read when a file is staged). ``calls`` records what was asked,
    ``names()`` what is kept.
    """

    def __init__(self, *, staging_dir: Path | None = None) -> None:
        self._staging_dir = staging_dir
        self._files: dict[str, bytes] = {}
        #: Every call, in order.
        self.calls: list[FileCall] = []

    def reset(self) -> None:
        """Forget every file and call."""
        self._files.clear()
        self.calls.clear()

    def names(self) -> list[str]:
        """The stored names, in the order they were first put."""
        return list(self._files)

    def content(self, record: FileRecord) -> bytes:
        """The stored bytes of ``record``; raises ``FileNotFound``."""
        try:
            return self._files[_name(record)]
        except KeyError:
            raise FileNotFound from None

    @property
    def location(self) -> Location:
        """Working copies are on local disk, like the filesystem store's."""
        return Location.LOCAL

    def staging(self, extension: str) -> AbstractAsyncContextManager[Path]:
        """A fresh 0600 file in the staging dir, removed on exit if still there."""
        return staging_path(self._staging(), extension)

    def staging_folder(self) -> AbstractAsyncContextManager[Path]:
        """A fresh 0700 folder in the staging dir, removed on exit with all it holds."""
        return staging_folder(self._staging())

    def _staging(self) -> Path:
        return self._staging_dir or Path(tempfile.gettempdir())

    async def put(
        self, file_id: str, extension: str, source: Path, *, now: datetime, move: bool = False
    ) -> FileRecord:
        """Read ``source`` into memory as ``<file_id><extension>``; remove it with ``move``."""
        name = stored_name(file_id, extension)
        self.calls.append(FileCall(method="put", name=name))
        with storage_errors(missing=StorageUnavailable("the file to store is missing")):
            data = await in_thread(source.read_bytes)
            self._files[name] = data
            if move:
                await in_thread(source.unlink)
        return FileRecord(
            id=file_id, location=Location.LOCAL, size=len(data), extension=extension, created=now
        )

    @contextlib.asynccontextmanager
    async def working_copy(self, record: FileRecord) -> AsyncIterator[Path]:
        """A staging file with the bytes, removed after the block."""
        self.calls.append(FileCall(method="working_copy", name=_name(record)))
        data = self.content(record)
        async with staging_path(self._staging(), record.extension) as path:
            with storage_errors():
                await in_thread(path.write_bytes, data)
            yield path

    async def open(self, record: FileRecord) -> AsyncIterator[bytes]:
        """The stored bytes in chunks."""
        self.calls.append(FileCall(method="open", name=_name(record)))
        data = self.content(record)
        for start in range(0, len(data), CHUNK_SIZE):
            yield data[start : start + CHUNK_SIZE]

    async def open_range(
        self, record: FileRecord, *, start: int, stop: int
    ) -> AsyncIterator[bytes]:
        """The stored bytes from ``start`` to ``stop``, in chunks."""
        if not 0 <= start < stop:
            raise ValueError("a range runs from 0 <= start to a larger stop")
        self.calls.append(FileCall(method="open_range", name=_name(record)))
        data = self.content(record)
        stop = min(stop, len(data))
        for offset in range(start, stop, CHUNK_SIZE):
            yield data[offset : min(offset + CHUNK_SIZE, stop)]

    async def delete(self, record: FileRecord) -> None:
        """Forget the bytes; nothing happens when they are already gone."""
        name = _name(record)
        self.calls.append(FileCall(method="delete", name=name))
        self._files.pop(name, None)

    async def delete_many(self, records: Sequence[FileRecord]) -> None:
        """Forget the bytes of every record, as ``delete`` does one by one."""
        for record in records:
            await self.delete(record)

    async def exists(self, record: FileRecord) -> bool:
        """True when the bytes are kept."""
        name = _name(record)
        self.calls.append(FileCall(method="exists", name=name))
        return name in self._files


def _name(record: FileRecord) -> str:
    return stored_name(record.id, record.extension)
