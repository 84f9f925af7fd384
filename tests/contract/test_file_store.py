"""The file-store contract, run over every file-store adapter."""

from __future__ import annotations

from pathlib import Path

import pytest

from transcriber_adapters.filesystem import FilesystemFileStore
from transcriber_adapters.memory.files import MemoryFileStore
from transcriber_contracts.file_store import FileStoreContract


class TestMemoryFileStore(FileStoreContract):
    """The in-memory store keeps the contract, its working copies being temp files."""

    working_copy_is_temporary = True

    @pytest.fixture
    def store(self) -> MemoryFileStore:
        return MemoryFileStore()


class TestFilesystemFileStore(FileStoreContract):
    """The local-folder store keeps the contract, handing out the stored file itself."""

    working_copy_is_temporary = False

    @pytest.fixture
    def store(self, tmp_path: Path) -> FilesystemFileStore:
        return FilesystemFileStore(tmp_path / "files")
