"""Static conformance: each adapter assigned to its port, checked by mypy in CI (ADR 2)."""

from __future__ import annotations

from pathlib import Path

from transcriber_adapters.ffmpeg import FfmpegConverter
from transcriber_adapters.filesystem import FilesystemFileStore
from transcriber_adapters.memory import (
    ManualClock,
    MemoryConverter,
    MemoryFileStore,
    MemoryJobRepository,
    MemoryNotifier,
    MemoryRecognizer,
)
from transcriber_adapters.sqlite import SqliteJobRepository
from transcriber_adapters.system import RandomIds, SystemClock
from transcriber_core.ports import (
    Clock,
    Converter,
    FileStore,
    IdSource,
    JobRepository,
    Notifier,
    Recognizer,
)


def check(sqlite: SqliteJobRepository, root: Path) -> None:
    """Never called: mypy reads the assignments."""
    repos: list[JobRepository] = [MemoryJobRepository(), sqlite]
    stores: list[FileStore] = [MemoryFileStore(), FilesystemFileStore(root)]
    converters: list[Converter] = [MemoryConverter(), FfmpegConverter()]
    recognizers: list[Recognizer] = [MemoryRecognizer()]
    notifiers: list[Notifier] = [MemoryNotifier()]
    clocks: list[Clock] = [SystemClock(), ManualClock()]
    ids: list[IdSource] = [RandomIds()]
    del repos, stores, converters, recognizers, notifiers, clocks, ids
