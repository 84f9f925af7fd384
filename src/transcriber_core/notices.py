"""What follows a job's outcome besides telling its sender: removing the recognizer's copy.

The worker calls it when a job ends and an owner's edit when it moves one,
so it lives here and neither imports the other's module for it. Telling the
sender is a delivery of the outbox (``outbox.py``, ADR 35).
"""

from __future__ import annotations

from transcriber_core.copies import STORAGE_COPY, remove_copy
from transcriber_core.entities import Job
from transcriber_core.naming import derived_file_id
from transcriber_core.part_steps import remove_part_copies
from transcriber_core.services import Services


async def remove_storage_copy(services: Services, job: Job) -> None:
    """Delete the recognizer's Object Storage copies of an ended job (its parts' too)."""
    if services.recognizer_files is None:
        return
    await remove_part_copies(services, job)
    await remove_copy(services, job.id, derived_file_id(job.id, STORAGE_COPY))
