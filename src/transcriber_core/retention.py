"""Retention (ADR 36): recordings go ``recordings_kept`` after their job ended, jobs ``jobs_kept``.

One process at a time sweeps: ``sweep`` first takes the repository's sweep
lease (one statement, on the store's clock), so of many processes and
hosts offering every ``sweep_interval`` one does the work. The work goes in
batches of ``sweep_batch`` jobs, each one repository transaction that hands
its file records to exactly one sweeper; the bytes go after the batch is
committed. Two sweepers that overlap anyway (a lease that ran out mid-sweep)
therefore never delete anything twice. Only counts reach the log.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

import attrs

from transcriber_core.deletion import remove_stored, shielded
from transcriber_core.entities import FileRecord
from transcriber_core.ports import Removed
from transcriber_core.services import Services

log = logging.getLogger("transcriber.retention")

#: The name of the sweep lease in the repository.
SWEEP = "retention"


@attrs.frozen(kw_only=True)
class Swept:
    """What one sweep deleted."""

    #: Jobs deleted with their transcripts (ended more than ``jobs_kept`` ago).
    jobs: int = 0
    #: Jobs whose files were deleted, the job kept (ended more than ``recordings_kept`` ago).
    recordings: int = 0
    #: File records deleted by either; their bytes too, unless counted in ``failed``.
    files: int = 0
    #: Files whose bytes could not be deleted (orphaned, logged by type).
    failed: int = 0


async def sweep(services: Services) -> Swept | None:
    """Sweep once if this process gets the lease; None when another process holds it."""
    settings = services.settings
    removals = services.removals
    if not await removals.take_sweep(SWEEP, lease=settings.sweep_interval):
        return None
    jobs, files_a, failed_a = await _drain(
        services,
        lambda: removals.remove_ended_jobs(age=settings.jobs_kept, limit=settings.sweep_batch),
    )
    recordings, files_b, failed_b = await _drain(
        services,
        lambda: removals.remove_ended_files(
            age=settings.recordings_kept, limit=settings.sweep_batch
        ),
    )
    swept = Swept(
        jobs=jobs, recordings=recordings, files=files_a + files_b, failed=failed_a + failed_b
    )
    log.info(
        "retention.swept",
        extra={
            "jobs": swept.jobs,
            "recordings": swept.recordings,
            "files": swept.files,
            "failed": swept.failed,
        },
    )
    return swept


async def _drain(
    services: Services, batch: Callable[[], Awaitable[Removed]]
) -> tuple[int, int, int]:
    """Run ``batch`` until it comes back short; jobs, files and failed deletions counted.

    The bytes of one batch are deleted while the repository takes the next:
    the store and the database each keep their own thread busy. Each such
    step runs to its end even if the sweep is cancelled (shutdown), and the
    bytes of the last committed batch are deleted on any way out: a batch
    the database let go of always loses its bytes.
    """
    limit = services.settings.sweep_batch
    jobs = files = failed = 0
    #: Records of the last committed batch whose bytes are not deleted yet.
    pending: list[FileRecord] = []

    async def step() -> tuple[Removed, int]:
        taking = asyncio.ensure_future(batch())
        lost = await remove_stored(services, pending)
        pending.clear()
        removed = await taking
        pending.extend(removed.files)
        return removed, lost

    try:
        while True:
            removed, lost = await shielded(step())
            jobs += len(removed.jobs)
            files += len(removed.files)
            failed += lost
            if len(removed.jobs) < limit:
                break
    finally:
        if pending:
            failed += await shielded(remove_stored(services, list(pending)))
    return jobs, files, failed
