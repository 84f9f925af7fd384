"""What follows a job's outcome: telling its sender, and removing the recognizer's copy.

The worker calls both when a job ends, intake tells ``accepted``, and an
owner's edit removes the copy: they live here so that none of those imports
another's module for them.
"""

from __future__ import annotations

import asyncio
import logging

from transcriber_core.copies import remove_copy
from transcriber_core.entities import Job
from transcriber_core.errors import NotifierUnavailable, TransientError
from transcriber_core.naming import derived_file_id
from transcriber_core.part_steps import remove_part_copies
from transcriber_core.policy import notice_pause
from transcriber_core.ports import Event
from transcriber_core.services import Services
from transcriber_core.steps import STORAGE_COPY

log = logging.getLogger("transcriber.notices")


async def tell(services: Services, job: Job, event: Event) -> None:
    """Tell the job's origin, trying again after a transient failure; never raises.

    The job is saved before anyone is told, so a notice that cannot be sent
    is logged and given up, never allowed to undo the result. A transient
    error (throttling, a dropped connection) is tried again after
    ``notice_pause``: a pause that doubles, or the one the notifier asked
    for (``NotifierUnavailable.retry_after``), capped.
    """
    settings = services.settings
    for attempt in range(1, settings.notify_attempts + 1):
        try:
            await services.notifier.notify(job, event)
        except Exception as exc:  # noqa: BLE001 - the job is saved; a lost message must not undo it
            final = attempt == settings.notify_attempts or not isinstance(exc, TransientError)
            log.warning(
                "notify.error",
                extra={
                    "job_id": job.id,
                    "event": event.value,
                    "attempt": attempt,
                    "error_type": type(exc).__name__,
                    "gave_up": final,
                },
            )
            if final:
                return
            asked = exc.retry_after if isinstance(exc, NotifierUnavailable) else None
            await asyncio.sleep(notice_pause(attempt, asked, settings).total_seconds())
        else:
            return


async def remove_storage_copy(services: Services, job: Job) -> None:
    """Delete the recognizer's Object Storage copies of an ended job (its parts' too)."""
    if services.recognizer_files is None:
        return
    await remove_part_copies(services, job)
    await remove_copy(services, job.id, derived_file_id(job.id, STORAGE_COPY))
