"""The ``FileRecords`` role: the records of the files jobs hold.

Subclass with the fixtures ``repo`` and ``another_repo`` (``job_repository``'s docstring).
"""

from __future__ import annotations

from datetime import timedelta

import attrs
import pytest

from transcriber_contracts.repository_support import (
    T0,
    RepositorySuite,
    make_file,
    new_id,
)
from transcriber_core.entities import (
    Location,
)
from transcriber_core.errors import FileNotFound
from transcriber_core.ports import JobRepository


class FileRecordsContract(RepositorySuite):
    """Subclass and provide the fixtures ``repo`` and ``another_repo``."""

    # -- file records --------------------------------------------------------

    async def test_file_record_roundtrips(self, repo: JobRepository) -> None:
        """Every field of a file record, object key and microseconds included, comes back."""
        record = make_file(
            location=Location.S3,
            object_key="transcriber/abc.ogg",
            size=8 * 1024**3,
            extension=".ogg",
            created=T0 + timedelta(microseconds=3),
        )
        await repo.put_file(record)
        assert await repo.get_file(record.id) == record

    async def test_put_file_replaces(self, repo: JobRepository) -> None:
        """Putting a record with a stored id replaces it: a retried step leaves one record."""
        record = make_file()
        await repo.put_file(record)
        replaced = attrs.evolve(record, size=99, created=T0 + timedelta(seconds=1))
        await repo.put_file(replaced)
        assert await repo.get_file(record.id) == replaced

    async def test_get_file_unknown_raises_file_not_found(self, repo: JobRepository) -> None:
        """An unknown file id is the core's FileNotFound, which a step turns into a failed job."""
        with pytest.raises(FileNotFound):
            await repo.get_file(new_id())

    async def test_delete_file_removes_it(self, repo: JobRepository) -> None:
        """A deleted record is gone."""
        record = make_file()
        await repo.put_file(record)
        await repo.delete_file(record.id)
        with pytest.raises(FileNotFound):
            await repo.get_file(record.id)

    async def test_delete_file_is_idempotent(self, repo: JobRepository) -> None:
        """Deleting a missing record is quiet, so a retried cleanup cannot fail."""
        record = make_file()
        await repo.put_file(record)
        await repo.delete_file(record.id)
        await repo.delete_file(record.id)
        await repo.delete_file(new_id())
