"""The recognize and check steps of a recording split into parts (ADR 26).

The recognize step plans the parts once (``splitting`` decides where to
cut), stores the plan, then for each part not yet started cuts its audio,
copies it to Object Storage when the recognizer reads from there, and starts
its own operation. The check step polls every started part that is not done,
stores each transcript as it comes and deletes that part's Object Storage
copy, and moves the job to ``done`` with the joined text once all are in.

Every write of a part is fenced by the job's lease, like the job's own save:
a worker that lost the lease writes nothing. A retry never redoes a part
that is done, nor restarts one that has an operation: it is checked.
"""

from __future__ import annotations

import logging
from datetime import timedelta
from pathlib import Path

import attrs

from transcriber_core.copies import remove_copy
from transcriber_core.entities import Event, FileRecord, Job, JobPart, State
from transcriber_core.errors import (
    FileNotFound,
    LeaseLost,
    MissingFile,
    RecognitionFailed,
)
from transcriber_core.naming import derived_file_id
from transcriber_core.outbox import deliveries_for
from transcriber_core.policy import first_check_delay, next_check_delay
from transcriber_core.ports import Pending, Recognized, Rejected
from transcriber_core.progress import note_progress
from transcriber_core.services import Services
from transcriber_core.speakers import diarize
from transcriber_core.splitting import choose_cut, join_parts, plan_ranges, search_window
from transcriber_core.transitions import transition

log = logging.getLogger("transcriber.parts")


def part_file_id(job_id: str, index: int) -> str:
    """The id of a part's cut audio: the same on every retry (ADR 5)."""
    return derived_file_id(job_id, f"part-{index}")


def part_copy_id(job_id: str, index: int) -> str:
    """The id of a part's Object Storage copy: the same on every retry."""
    return derived_file_id(job_id, f"part-{index}-storage")


def _lease_of(job: Job) -> str:
    if job.acquisition_id is None:
        # A step runs on a leased job only; without a lease nothing may be written.
        raise LeaseLost()
    return job.acquisition_id


async def _save(services: Services, job: Job, part: JobPart) -> JobPart:
    await services.queue.save_parts_if_held(job.id, [part], acquisition_id=_lease_of(job))
    return part


async def recognize_parts(
    job: Job, services: Services, audio: FileRecord, parts: list[JobPart], longest: float | None
) -> Job:
    """Plan the parts if there are none yet, start every part not yet started, move to check."""
    lease = _lease_of(job)
    advised: list[timedelta | None] = []
    try:
        async with services.files.working_copy(audio) as path:
            if not parts:
                if longest is None or job.duration is None:
                    raise RecognitionFailed("the recording has no parts to recognise")
                parts = await _plan(job, services, path, job.duration, longest)
                await services.queue.save_parts_if_held(job.id, parts, acquisition_id=lease)
                log.info("parts.planned", extra={"job_id": job.id, "parts": len(parts)})
                # The parts' recognition begins: the estimate counts from here (ADR 51).
                await note_progress(services, job, 0.0, begun=timedelta(0))
            for part in parts:
                if part.done or part.operation_id is not None:
                    continue
                advised.append(await _start(job, services, path, part))
    except FileNotFound:
        raise MissingFile("the converted audio is missing from storage") from None
    delays = [first_check_delay(delay, services.settings) for delay in advised]
    delay = min(delays, default=services.settings.first_check_delay)
    now = services.clock.now()
    return transition(job, State.CHECK, now=now, delay_until=now + delay)


async def _plan(
    job: Job, services: Services, path: Path, seconds: float, longest: float
) -> list[JobPart]:
    """Cut points chosen window by window: the converter only decodes where a cut may go."""
    cuts: list[float] = []
    start = 0.0
    while (window := search_window(start, seconds=seconds, longest=longest)) is not None:
        silences = await services.converter.find_silences(path, start=window.start, end=window.end)
        start = choose_cut(window, silences)
        cuts.append(start)
    return [
        JobPart(job_id=job.id, index=index, start=start, end=end)
        for index, (start, end) in enumerate(plan_ranges(seconds, cuts))
    ]


async def _start(job: Job, services: Services, path: Path, part: JobPart) -> timedelta | None:
    """Cut the part, copy it for the recognizer if needed, start its operation; record each step.

    Each file is recorded before the part points at it (ADR 5); a retry
    cuts and copies again under the same ids.
    """
    extension = services.converter.output_extension
    async with services.files.staging(extension) as target:
        seconds = await services.converter.cut(path, target, start=part.start, end=part.end)
        record = await services.files.put(
            part_file_id(job.id, part.index),
            extension,
            target,
            now=services.clock.now(),
            move=True,
        )
    await services.file_records.put_file(record)
    part = await _save(services, job, attrs.evolve(part, file_id=record.id))
    if services.recognizer_files is not None:
        async with services.files.working_copy(record) as local:
            record = await services.recognizer_files.put(
                part_copy_id(job.id, part.index), record.extension, local, now=services.clock.now()
            )
        await services.file_records.put_file(record)
        part = await _save(services, job, attrs.evolve(part, storage_file_id=record.id))
    started = await services.recognizer.start(record, duration=seconds, request=job.request)
    await _save(services, job, attrs.evolve(part, operation_id=started.operation_id))
    log.info("part.started", extra={"job_id": job.id, "part": part.index})
    return started.advised_delay


async def check_parts(job: Job, services: Services, parts: list[JobPart]) -> Job:
    """Check each started part not yet done; ``done`` with the joined text once every part is."""
    waits: list[timedelta] = []
    pending = False
    finished = 0
    for part in parts:
        if part.done:
            continue
        if part.operation_id is None:
            raise RecognitionFailed(f"part {part.index + 1} of {len(parts)} was never started")
        result = await services.recognizer.check(part.operation_id)
        match result:
            case Pending(retry_after=retry_after):
                pending = True
                if retry_after is not None:
                    waits.append(retry_after)
            case Recognized(text=text, words=words):
                done = await _save(services, job, attrs.evolve(part, text=text, words=words))
                parts[part.index] = done
                finished += 1
                log.info("part.done", extra={"job_id": job.id, "part": part.index})
                # A /v1 stream waiting on this job sends the part's text now.
                services.wakeup.job_changed(job.id)
                await remove_part_copy(services, job, part)
            case Rejected(reason=reason):
                raise RecognitionFailed(f"part {part.index + 1} of {len(parts)}: {reason}")
    if finished and pending:
        # The seconds of the parts done so far: a split recording's progress (ADR 51).
        seconds = sum(p.seconds for p in parts if p.done)
        await note_progress(services, job, seconds, deliveries=deliveries_for(job, Event.PROGRESS))
    now = services.clock.now()
    if pending:
        delay = next_check_delay(max(waits, default=None), services.settings)
        return transition(job, State.CHECK, now=now, delay_until=now + delay)
    text, words = join_parts(parts)
    words, speakers = await diarize(job, services, words)
    return transition(
        job, State.DONE, now=services.clock.now(), text=text, words=words, speakers=speakers
    )


async def remove_part_copy(services: Services, job: Job, part: JobPart) -> None:
    """Delete one part's Object Storage copy and its record; a failure is only logged."""
    await remove_copy(services, job.id, part_copy_id(job.id, part.index), part=part.index)


async def remove_part_copies(services: Services, job: Job) -> None:
    """Delete the Object Storage copy of every part of an ended job, done or not."""
    if services.recognizer_files is None:
        return
    try:
        parts = await services.jobs.get_parts(job.id)
    except Exception as exc:  # noqa: BLE001 - the copies are orphaned, not the job
        log.warning(
            "storage_copy.delete_error", extra={"job_id": job.id, "error_type": type(exc).__name__}
        )
        return
    for part in parts:
        await remove_part_copy(services, job, part)
