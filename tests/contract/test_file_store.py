"""The file-store contract, run over every file-store adapter."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.support.s3 import MotoS3
from transcriber_adapters.filesystem import FilesystemFileStore
from transcriber_adapters.memory.files import MemoryFileStore
from transcriber_adapters.s3 import S3FileStore
from transcriber_contracts.file_store import FileStoreContract


class TestMemoryFileStore(FileStoreContract):
    """The in-memory store keeps the contract, its working copies being temp files."""

    working_copy_is_temporary = True

    @pytest.fixture
    def store(self, staging_dir: Path) -> MemoryFileStore:
        return MemoryFileStore(staging_dir=staging_dir)


class TestFilesystemFileStore(FileStoreContract):
    """The local-folder store keeps the contract, handing out the stored file itself."""

    working_copy_is_temporary = False

    @pytest.fixture
    def store(self, tmp_path: Path, staging_dir: Path) -> FilesystemFileStore:
        return FilesystemFileStore(tmp_path / "data" / "files", staging_dir=staging_dir)


class TestS3FileStore(FileStoreContract):
    """The S3 store keeps the contract against moto's server on 127.0.0.1."""

    working_copy_is_temporary = True

    @pytest.fixture
    async def store(self, moto_s3: MotoS3, staging_dir: Path) -> AsyncIterator[S3FileStore]:
        store = moto_s3.store(moto_s3.new_bucket(), staging_dir=staging_dir)
        try:
            yield store
        finally:
            await store.close()
