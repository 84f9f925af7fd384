"""The pipeline steps as plain async functions over the ports (``fetch`` in ``fetching``).

A step takes the leased job and returns the job as it should be saved, made
by ``transition``. It raises ``PermanentError`` to fail the job and
``TransientError`` to try again later; it never writes the job itself.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from pathlib import Path

from transcriber_core.copies import storage_copy_id
from transcriber_core.entities import Event, FileRecord, Job, State
from transcriber_core.errors import (
    DirectRefused,
    FileNotFound,
    MissingFile,
    PermanentError,
    RecognitionFailed,
)
from transcriber_core.fetching import fetch
from transcriber_core.naming import derived_file_id
from transcriber_core.outbox import deliveries_for
from transcriber_core.part_steps import check_parts, recognize_parts
from transcriber_core.policy import first_check_delay, next_check_delay
from transcriber_core.ports import FileStore, Pending, Recognized, Rejected
from transcriber_core.progress import ProgressNotes
from transcriber_core.services import Services
from transcriber_core.speakers import diarize
from transcriber_core.splitting import part_length
from transcriber_core.transitions import transition

log = logging.getLogger("transcriber.steps")

#: Role names of the files steps make; see ``derived_file_id``.
CONVERTED = "converted"

Step = Callable[[Job, Services], Awaitable[Job]]


async def load_file(services: Services, file_id: str | None, what: str) -> FileRecord:
    """The record a job refers to; a missing reference fails the job, it never crashes."""
    if file_id is None:
        raise MissingFile(f"the job has no {what} file")
    try:
        return await services.file_records.get_file(file_id)
    except FileNotFound:
        raise MissingFile(f"the {what} file of the job no longer exists") from None


async def convert(job: Job, services: Services) -> Job:
    """Convert the recording to mono Ogg/Opus and measure its duration.

    A short job that decodes past the express limit is stopped there and
    handed back as long (ADR 27): a tiny file that decodes to hours must
    not hold the express lane while it converts. A long job converts in the
    background (ADR 63): a voice note's conversion comes first on the CPUs.
    """
    source = await load_file(services, job.source_file_id, "source")
    files = services.files
    extension = services.converter.output_extension
    limit = services.settings.express_duration.total_seconds()
    try:
        async with files.working_copy(source) as path, files.staging(extension) as target:
            if job.short:
                duration = await _convert_within(services, path, target, limit)
                if duration is None:
                    log.info("job.lane_long", extra={"job_id": job.id, "limit_seconds": limit})
                    return transition(job, State.CONVERT, now=services.clock.now(), short=False)
            else:
                duration = await services.converter.convert(path, target, background=True)
            record = await files.put(
                derived_file_id(job.id, CONVERTED),
                extension,
                target,
                now=services.clock.now(),
                move=True,
            )
    except FileNotFound:
        raise MissingFile("the recording is missing from storage") from None
    except PermanentError:
        if services.usage is not None:
            # A recording the converter refuses is never transcribed: it counts nothing, and
            # a worst case reserved for it at intake is given back (ADR 67).
            await services.usage.settle(job.id, 0.0)
        raise
    # The record exists before the job points at it (reference: queue rule 9); a retry
    # replaces both under the same id.
    await services.file_records.put_file(record)
    if services.usage is not None:
        # The measured length replaces the one the header declared at intake (ADR 59): a
        # set, keyed by the job, so a retried convert counts the recording once.
        await services.usage.settle(job.id, duration)
    return transition(
        job,
        State.RECOGNIZE,
        now=services.clock.now(),
        converted_file_id=record.id,
        duration=duration,
        short=job.short and duration <= limit,
    )


async def _convert_within(
    services: Services, source: Path, target: Path, limit: float
) -> float | None:
    """Convert, but stop as soon as the output passes ``limit`` seconds; None when it did."""
    passed = asyncio.Event()

    def watch(seconds: float) -> None:
        if seconds > limit:
            passed.set()

    converting = asyncio.ensure_future(
        services.converter.convert(source, target, on_progress=watch)
    )
    stopping = asyncio.ensure_future(passed.wait())
    try:
        await asyncio.wait({converting, stopping}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in (converting, stopping):
            if not task.done():
                task.cancel()
        # The converter kills its process when cancelled; wait for that before going on.
        await asyncio.gather(converting, stopping, return_exceptions=True)
    if converting.cancelled():
        return None
    # Finished (or failed) before the watch could stop it: its own answer stands.
    return converting.result()


async def recognize(job: Job, services: Services) -> Job:
    """Hand the converted audio to the recognizer, copying it to Object Storage first if needed.

    A recognizer with no store of its own (``recognizer_files`` None) reads
    the stored audio itself: a local engine, or SpeechKit when the files
    already live on its bucket (ADR 33); nothing is copied. Audio the
    recognizer takes directly (``limits.takes_directly``: a synchronous
    API) is not copied either; if the recognizer refuses it after all
    (``DirectRefused``), it is copied and started the usual way (ADR 29).

    Audio longer than the recognizer takes is split and its parts started
    instead (ADR 26); a job that already has parts carries on with them.
    """
    audio = await load_file(services, job.converted_file_id, "converted")
    parts = await services.jobs.get_parts(job.id)
    longest = part_length(services.recognizer.limits, seconds=job.duration, size=audio.size)
    if parts or longest is not None:
        return await recognize_parts(job, services, audio, parts, longest)
    storage_file_id = None
    started = None
    limits = services.recognizer.limits
    # A recognizer that works within its start reports how far it got (ADR 51).
    notes = ProgressNotes(services, job, deliveries=deliveries_for(job, Event.PROGRESS))
    try:
        if services.recognizer_files is None or limits.takes_directly(
            seconds=job.duration, size=audio.size
        ):
            # The recognizer reads the stored audio: its own store is ours, or the audio is
            # short enough for a synchronous API (ADR 29, 33).
            try:
                started = await services.recognizer.start(
                    audio, duration=job.duration, request=job.request, on_progress=notes
                )
            except DirectRefused:
                if services.recognizer_files is None:
                    raise
                log.info("job.direct_refused", extra={"job_id": job.id})
        if started is None:
            audio = await _copy_for_recognizer(job, services, audio, services.recognizer_files)
            storage_file_id = audio.id
            started = await services.recognizer.start(
                audio, duration=job.duration, request=job.request, on_progress=notes
            )
    finally:
        await notes.close()
    now = services.clock.now()
    match started.outcome:
        case Recognized(text=text, words=words, language=language, prints=prints):
            # A recognizer that worked while it started (ADR 28): nothing to check.
            labelled = await diarize(job, services, words, prints)
            return transition(
                job,
                State.DONE,
                now=services.clock.now(),
                operation_id=started.operation_id,
                storage_file_id=storage_file_id,
                text=text,
                words=labelled.words,
                language=language,
                speakers=labelled.speakers,
                prints=labelled.prints,
            )
        case Rejected(reason=reason):
            raise RecognitionFailed(reason)
    delay = first_check_delay(started.advised_delay, services.settings)
    return transition(
        job,
        State.CHECK,
        now=now,
        operation_id=started.operation_id,
        storage_file_id=storage_file_id,
        delay_until=now + delay,
    )


async def _copy_for_recognizer(
    job: Job, services: Services, audio: FileRecord, store: FileStore | None
) -> FileRecord:
    """Copy the converted audio to where the recognizer reads it; the record exists first."""
    if store is None:
        # Only reached when a direct start was refused, which re-raises without a store.
        raise RecognitionFailed("the recognizer has nowhere to read the audio from")
    copy_id = storage_copy_id(job.id)
    try:
        earlier = await services.file_records.get_file(copy_id)
    except FileNotFound:
        earlier = None
    if earlier is not None and earlier.location == store.location and await store.exists(earlier):
        # A try that made the copy and then waited (a spent budget, a 429): no upload again.
        return earlier
    try:
        async with services.files.working_copy(audio) as path:
            copy = await store.put(
                copy_id,
                audio.extension,
                path,
                now=services.clock.now(),
            )
    except FileNotFound:
        raise MissingFile("the converted audio is missing from storage") from None
    await services.file_records.put_file(copy)
    return copy


async def check(job: Job, services: Services) -> Job:
    """Ask the recognizer about the operation; store the text as soon as it is done."""
    parts = await services.jobs.get_parts(job.id)
    if parts:
        return await check_parts(job, services, parts)
    if job.operation_id is None:
        raise RecognitionFailed("the job has no recognition operation to check")
    result = await services.recognizer.check(job.operation_id)
    now = services.clock.now()
    match result:
        case Pending(retry_after=retry_after):
            delay = next_check_delay(retry_after, services.settings)
            return transition(job, State.CHECK, now=now, delay_until=now + delay)
        case Recognized(text=text, words=words, language=language, prints=prints):
            labelled = await diarize(job, services, words, prints)
            return transition(
                job,
                State.DONE,
                now=services.clock.now(),
                text=text,
                words=labelled.words,
                language=language,
                speakers=labelled.speakers,
                prints=labelled.prints,
            )
        case Rejected(reason=reason):
            raise RecognitionFailed(reason)


#: The step that works on each step state.
STEPS: dict[State, Step] = {
    State.FETCH: fetch,
    State.CONVERT: convert,
    State.RECOGNIZE: recognize,
    State.CHECK: check,
}
