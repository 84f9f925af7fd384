"""The steps of a recording split into parts, each part a unit of work of its own (ADR 26, 52).

The job's recognize step plans the parts once (``splitting`` decides where to
cut), stores the plan under the job's lease and moves the job to ``check``,
where it waits. Any worker then takes the next unfinished part
(``PartQueue``) and runs ``recognize_part`` under the part's own lease: cut
its audio, copy it to Object Storage when the recognizer reads from there,
start its operation, and check it until its transcript is in. The last part
finished makes the job due; its check step (``check_parts``) joins the parts
and ends the job in one fenced save with its deliveries.

Every write of a part is fenced by the part's lease: a worker that lost it
writes nothing. A retry never redoes a part that is done, nor restarts one
that has an operation: it is checked.
"""

from __future__ import annotations

import logging
import time
from datetime import timedelta
from pathlib import Path

import attrs

from transcriber_core.copies import remove_copy
from transcriber_core.entities import FileRecord, Job, JobPart, State
from transcriber_core.errors import (
    FileNotFound,
    JobNotFound,
    LeaseLost,
    MissingFile,
    RecognitionFailed,
)
from transcriber_core.naming import derived_file_id
from transcriber_core.outbox import deliveries_for
from transcriber_core.policy import first_check_delay, next_check_delay, parts_wait
from transcriber_core.ports import CheckResult, Event, Pending, Recognized, Rejected, Started
from transcriber_core.progress import note_progress
from transcriber_core.services import Services
from transcriber_core.speakers import diarize, hear, hears_early
from transcriber_core.splitting import Cut, choose_cut, join_parts, plan_ranges, search_window
from transcriber_core.transitions import transition

log = logging.getLogger("transcriber.parts")


def part_file_id(job_id: str, index: int) -> str:
    """The id of a part's cut audio: the same on every retry (ADR 5)."""
    return derived_file_id(job_id, f"part-{index}")


def part_copy_id(job_id: str, index: int) -> str:
    """The id of a part's Object Storage copy: the same on every retry."""
    return derived_file_id(job_id, f"part-{index}-storage")


def _lease_of(held: Job | JobPart) -> str:
    if held.acquisition_id is None:
        # A step runs on a leased job or part only; without a lease nothing may be written.
        raise LeaseLost()
    return held.acquisition_id


async def recognize_parts(
    job: Job, services: Services, audio: FileRecord, parts: list[JobPart], longest: float | None
) -> Job:
    """Plan the parts if there are none yet, then wait in check while workers recognise them."""
    if not parts:
        if longest is None or job.duration is None:
            raise RecognitionFailed("the recording has no parts to recognise")
        try:
            async with services.files.working_copy(audio) as path:
                parts = await _plan(job, services, path, job.duration, longest)
        except FileNotFound:
            raise MissingFile("the converted audio is missing from storage") from None
        await services.queue.save_parts_if_held(job.id, parts, acquisition_id=_lease_of(job))
        log.info("parts.planned", extra={"job_id": job.id, "parts": len(parts)})
        # The parts' recognition begins: the estimate counts from here (ADR 51).
        await note_progress(services, job, 0.0, begun=timedelta(0))
    if hears_early(job, services):
        # Due at once: a check loop hears the speakers while the parts are recognised
        # (ADR 89), so the diarizer's CPU overlaps the recognizer's, not follows it.
        now = services.clock.now()
        return transition(job, State.CHECK, now=now, delay_until=now)
    return _wait_for_parts(job, services)


def _wait_for_parts(job: Job, services: Services) -> Job:
    now = services.clock.now()
    return transition(job, State.CHECK, now=now, delay_until=now + parts_wait(services.settings))


async def _hear_early(
    job: Job, services: Services, parts: list[JobPart]
) -> tuple[Job, list[JobPart]]:
    """The job with its speakers heard, and its parts as they are after (ADR 89).

    Runs in the job's check step, under its lease, while other loops
    recognise the parts; the turns are saved with the job when it waits
    again, and label the words at the join. Only when parts are left:
    otherwise the join hears them itself, as for a recording not split.
    """
    if not hears_early(job, services) or all(part.finished for part in parts):
        return job, parts
    started = time.monotonic()
    heard = await hear(job, services)
    log.info(
        "job.heard",
        extra={"job_id": job.id, "seconds": round(time.monotonic() - started, 3)},
    )
    # The parts went on meanwhile: the last may have finished while the diarizer ran.
    return attrs.evolve(job, heard=heard), await services.jobs.get_parts(job.id)


async def _plan(
    job: Job, services: Services, path: Path, seconds: float, longest: float
) -> list[JobPart]:
    """Cut points chosen window by window: the converter only decodes where a cut may go."""
    cuts: list[Cut] = []
    start = 0.0
    while (window := search_window(start, seconds=seconds, longest=longest)) is not None:
        silences = await services.converter.find_silences(path, start=window.start, end=window.end)
        cuts.append(cut := choose_cut(window, silences))
        start = cut.next_start
    return [
        JobPart(job_id=job.id, index=index, start=start, end=end)
        for index, (start, end) in enumerate(plan_ranges(seconds, cuts))
    ]


async def check_parts(job: Job, services: Services, parts: list[JobPart]) -> Job:
    """``done`` with the joined text once every part is; failed with a part; else wait again.

    A job that wants speakers has them heard first, while parts are left.
    """
    job, parts = await _hear_early(job, services, parts)
    for part in parts:
        if part.failed:
            raise RecognitionFailed(f"part {part.index + 1} of {len(parts)}: {part.error}")
    if not all(part.done for part in parts):
        # The seconds of the parts done so far: a split recording's progress (ADR 51),
        # noted when more are done than the job last showed.
        seconds = sum(part.seconds for part in parts if part.done)
        shown = job.progress.seconds_done if job.progress is not None else 0.0
        if seconds > shown:
            deliveries = deliveries_for(job, Event.PROGRESS)
            await note_progress(services, job, seconds, deliveries=deliveries)
        return _wait_for_parts(job, services)
    text, words = join_parts(parts)
    labelled = await diarize(job, services, words)
    return transition(
        job,
        State.DONE,
        now=services.clock.now(),
        text=text,
        words=labelled.words,
        speakers=labelled.speakers,
        prints=labelled.prints,
    )


async def recognize_part(part: JobPart, services: Services) -> tuple[JobPart, timedelta | None]:
    """Move one leased part on: start it, or check it; the part to save and its delay.

    A part done or started is returned with its attempts back at 0 and no
    error, as a job's step that finished. A rejected part raises
    ``RecognitionFailed``; what may pass on a retry raises as a job's step does.
    """
    try:
        job = await services.jobs.get(part.job_id)
    except JobNotFound:
        # The job was deleted: its parts went with it.
        raise LeaseLost() from None
    if part.operation_id is None:
        audio = await _converted(services, job)
        try:
            async with services.files.working_copy(audio) as path:
                part, started = await _start(job, services, path, part)
        except FileNotFound:
            raise MissingFile("the converted audio is missing from storage") from None
        part = attrs.evolve(part, operation_id=started.operation_id, attempts=0, error=None)
        if started.outcome is None:
            return part, first_check_delay(started.advised_delay, services.settings)
        outcome: CheckResult = started.outcome
    else:
        outcome = await services.recognizer.check(part.operation_id)
        part = attrs.evolve(part, attempts=0, error=None)
    match outcome:
        case Pending(retry_after=retry_after):
            return part, next_check_delay(retry_after, services.settings)
        case Recognized(text=text, words=words):
            log.info("part.done", extra={"job_id": part.job_id, "part": part.index})
            await remove_part_copy(services, job, part)
            return attrs.evolve(part, text=text, words=words), None
        case Rejected(reason=reason):
            # The job's check step names the part when it fails the job.
            raise RecognitionFailed(reason)


async def _converted(services: Services, job: Job) -> FileRecord:
    if job.converted_file_id is None:
        raise MissingFile("the job has no converted file")
    try:
        return await services.file_records.get_file(job.converted_file_id)
    except FileNotFound:
        raise MissingFile("the converted file of the job no longer exists") from None


async def _save(services: Services, part: JobPart) -> JobPart:
    await services.parts.save_part_if_held(part, acquisition_id=_lease_of(part))
    return part


async def _start(
    job: Job, services: Services, path: Path, part: JobPart
) -> tuple[JobPart, Started]:
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
    part = await _save(services, attrs.evolve(part, file_id=record.id))
    if services.recognizer_files is not None:
        async with services.files.working_copy(record) as local:
            record = await services.recognizer_files.put(
                part_copy_id(job.id, part.index), record.extension, local, now=services.clock.now()
            )
        await services.file_records.put_file(record)
        part = await _save(services, attrs.evolve(part, storage_file_id=record.id))
    started = await services.recognizer.start(record, duration=seconds, request=job.request)
    log.info("part.started", extra={"job_id": job.id, "part": part.index})
    return part, started


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
