"""Deleting a job and everything it holds, and what a step does when its job was deleted (ADR 36).

The rule, in two halves:

* **Deleting** removes the job, its parts and their file records in one
  repository transaction first, so from that moment the job answers 404
  and every fenced write of a worker still holding it fails; then the
  bytes of those records go from the store that holds each (the recording,
  derived files, parts' files, the Object Storage copy).
* **A step whose job vanished** may have stored a file between the delete
  and its fenced save: the worker runs each step over stores that note what
  it wrote (``FileLedger``), and when its lease turns out lost because the
  job no longer exists, it deletes those writes (``forget_writes``). A job
  that still exists is another worker's now: its files are left alone.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Coroutine, Sequence
from contextlib import AbstractAsyncContextManager
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar

import attrs

from transcriber_core.copies import remove_copy, storage_copy_id
from transcriber_core.entities import FileRecord, Location
from transcriber_core.errors import JobNotFound
from transcriber_core.people import person_owner
from transcriber_core.ports import Accounts, FileStore
from transcriber_core.services import Services

log = logging.getLogger("transcriber.deletion")

T = TypeVar("T")


def store_for(services: Services, record: FileRecord) -> FileStore | None:
    """The service's store that holds the record's location, if it has one."""
    for store in (services.files, services.recognizer_files):
        if store is not None and store.location == record.location:
            return store
    return None


async def remove_stored(services: Services, records: Sequence[FileRecord]) -> int:
    """Delete the bytes of ``records`` (already out of the repository); how many may remain.

    One ``delete_many`` per store that holds some. A failure is logged by
    error type and count only (never a key or a name) and the other stores
    go on: the bytes are orphaned, not the caller's work.
    """
    held: dict[Location, list[FileRecord]] = {}
    for record in records:
        held.setdefault(record.location, []).append(record)
    failed = 0
    for location, mine in held.items():
        store = store_for(services, mine[0])
        # A store this process is not configured for (Object Storage turned off) keeps them.
        error_type = "NoStore"
        if store is not None:
            try:
                await store.delete_many(mine)
            except Exception as exc:  # noqa: BLE001 - orphaned bytes, not a failed deletion
                error_type = type(exc).__name__
            else:
                continue
        log.warning(
            "file.delete_error",
            extra={"location": location.value, "files": len(mine), "error_type": error_type},
        )
        failed += len(mine)
    return failed


async def delete_job(services: Services, job_id: str) -> int:
    """Delete the job with everything it holds; how many files went. Raises ``JobNotFound``.

    The repository forgets the job first (one transaction), so nothing can
    read it or write for it while its bytes are being deleted. Runs to its
    end even if the caller is cancelled: rows the database let go of must
    lose their bytes too.
    """
    return await shielded(_delete_job(services, job_id))


async def _delete_job(services: Services, job_id: str) -> int:
    removed = await services.removals.delete_job(job_id)
    failed = await remove_stored(services, removed.files)
    # A job waiting in recognize may hold a copy its row does not name yet (made, then a
    # 429 or an empty budget): found by its derived id, it goes too (red team 3).
    await remove_copy(services, job_id, storage_copy_id(job_id))
    log.info("job.deleted", extra={"job_id": job_id, "files": len(removed.files), "failed": failed})
    return len(removed.files)


#: Recordings read at once while a person's are deleted.
_BATCH = 50


async def forget_person(services: Services, people: Accounts, person_id: str) -> int | None:
    """Delete a person with their recordings and voices; how many recordings went (ADR 90).

    None when there is no such person. Disabled first, so no token,
    session or chat of theirs sends anything more; then each recording
    goes by ``delete_job`` (files and all, a running one's worker writes
    nothing), their voices' prints by ``forget_owner``, and last their row
    with their invites, tokens, sessions and chat links. Interrupted, it
    is simply done again: the person is still there, disabled.
    """
    if not await people.disable_person(person_id, now=services.clock.now()):
        return None
    owner = person_owner(person_id)
    deleted = 0
    while batch := await services.listings.list_owned_jobs(owner, limit=_BATCH):
        for job in batch:
            with contextlib.suppress(JobNotFound):  # deleted meanwhile by its owner
                await delete_job(services, job.id)
            deleted += 1
    voices = 0 if services.voices is None else await services.voices.forget_owner(owner)
    await people.delete_person(person_id)
    log.info("person.deleted", extra={"recordings": deleted, "voices": voices})
    return deleted


async def shielded(work: Coroutine[Any, Any, T] | asyncio.Future[T]) -> T:
    """Run ``work`` to its end even if the caller is cancelled: forgotten rows must lose bytes."""
    task = asyncio.ensure_future(work)
    try:
        return await asyncio.shield(task)
    except asyncio.CancelledError:
        while not task.done():
            try:
                await asyncio.wait({task})
            except asyncio.CancelledError:
                continue
        raise


@attrs.define
class FileLedger:
    """The files one step stored, in the order it stored them."""

    written: list[FileRecord] = attrs.field(factory=list)

    def watch(self, services: Services) -> Services:
        """``services`` whose file stores note here every file they store."""
        # Typed as the port, so mypy checks the wrapper against it (evolve takes anything).
        files: FileStore = _Noted(services.files, self)
        recognizer_files: FileStore | None = None
        if services.recognizer_files is not None:
            recognizer_files = _Noted(services.recognizer_files, self)
        return attrs.evolve(services, files=files, recognizer_files=recognizer_files)


class _Noted:
    """A file store that notes each ``put`` in a ledger; everything else is the store's own."""

    def __init__(self, store: FileStore, ledger: FileLedger) -> None:
        self._store = store
        self._ledger = ledger

    @property
    def location(self) -> Location:
        """The wrapped store's location."""
        return self._store.location

    def staging(self, extension: str) -> AbstractAsyncContextManager[Path]:
        """The wrapped store's staging file."""
        return self._store.staging(extension)

    def staging_folder(self) -> AbstractAsyncContextManager[Path]:
        """The wrapped store's staging folder."""
        return self._store.staging_folder()

    async def put(
        self, file_id: str, extension: str, source: Path, *, now: datetime, move: bool = False
    ) -> FileRecord:
        """Store through the wrapped store and note the record."""
        record = await self._store.put(file_id, extension, source, now=now, move=move)
        self._ledger.written.append(record)
        return record

    def working_copy(self, record: FileRecord) -> AbstractAsyncContextManager[Path]:
        """The wrapped store's working copy."""
        return self._store.working_copy(record)

    def open(self, record: FileRecord) -> AsyncIterator[bytes]:
        """The wrapped store's bytes."""
        return self._store.open(record)

    def open_range(self, record: FileRecord, *, start: int, stop: int) -> AsyncIterator[bytes]:
        """The wrapped store's bytes of the range."""
        return self._store.open_range(record, start=start, stop=stop)

    async def delete(self, record: FileRecord) -> None:
        """Delete through the wrapped store."""
        await self._store.delete(record)

    async def delete_many(self, records: Sequence[FileRecord]) -> None:
        """Delete through the wrapped store."""
        await self._store.delete_many(records)

    async def exists(self, record: FileRecord) -> bool:
        """Ask the wrapped store."""
        return await self._store.exists(record)


async def forget_writes(services: Services, job_id: str, ledger: FileLedger) -> int:
    """After a lost lease: if the job was deleted, delete what the step stored; how many.

    A job that still exists passed to another worker, which uses the same
    file ids (ADR 5): nothing is touched then. Runs to its end even if the
    worker is cancelled meanwhile (shutdown).
    """
    if not ledger.written:
        return 0
    return await shielded(_forget_writes(services, job_id, ledger.written))


async def _forget_writes(services: Services, job_id: str, written: list[FileRecord]) -> int:
    try:
        await services.jobs.get(job_id)
    except JobNotFound:
        pass
    else:
        return 0
    records = list({record.id: record for record in written}.values())
    for record in records:
        await services.file_records.delete_file(record.id)
    failed = await remove_stored(services, records)
    log.info(
        "job.deleted_while_running",
        extra={"job_id": job_id, "files": len(records), "failed": failed},
    )
    return len(records)
