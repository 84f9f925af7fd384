"""Taking a recording into storage and the queue, the same way for every intake."""

from __future__ import annotations

import logging
from pathlib import Path

from transcriber_core.entities import Job, Origin, State
from transcriber_core.ports import Event
from transcriber_core.services import Services
from transcriber_core.worker import tell

log = logging.getLogger("transcriber.intake")


async def submit(
    services: Services,
    source: Path,
    *,
    extension: str,
    origin: Origin,
    dedup_key: str | None = None,
) -> tuple[Job, bool]:
    """Move the recording at ``source`` into storage and enqueue a job for it.

    Returns the job and True, or, when ``dedup_key`` was seen before, the
    first job and False with nothing new stored. ``source`` is gone either way.
    """
    now = services.clock.now()
    record = await services.files.put(services.ids.new_id(), extension, source, now=now, move=True)
    job = Job(
        id=services.ids.new_id(),
        state=State.CONVERT,
        origin=origin,
        source_file_id=record.id,
        dedup_key=dedup_key,
        created=now,
        updated=now,
    )
    try:
        stored, is_new = await services.repo.create(job, [record])
    except Exception:
        await services.files.delete(record)
        raise
    # A cancellation keeps the bytes: the insert may still commit after its caller
    # went away, and a job must never point at a deleted recording (orphan bytes
    # are the lesser harm, ADR 5).
    if not is_new:
        await services.files.delete(record)
        log.info("job.duplicate", extra={"job_id": stored.id})
        return stored, False
    log.info(
        "job.accepted",
        extra={
            "job_id": job.id,
            "origin": origin.kind.value,
            "extension": extension,
            "size": record.size,
        },
    )
    services.wakeup.notify(State.CONVERT)
    await tell(services, stored, Event.ACCEPTED)
    return stored, True
