"""The three pipeline steps as plain async functions over the ports.

A step takes the leased job and returns the job as it should be saved, made
by ``transition``. It raises ``PermanentError`` to fail the job and
``TransientError`` to try again later; it never writes the job itself.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from transcriber_core.entities import FileRecord, Job, State
from transcriber_core.errors import FileNotFound, MissingFile, RecognitionFailed
from transcriber_core.naming import derived_file_id
from transcriber_core.policy import first_check_delay, next_check_delay
from transcriber_core.ports import Pending, Recognized, Rejected
from transcriber_core.services import Services
from transcriber_core.transitions import transition

#: Role names of the files steps make; see ``derived_file_id``.
CONVERTED = "converted"
STORAGE_COPY = "storage"

Step = Callable[[Job, Services], Awaitable[Job]]


async def load_file(services: Services, file_id: str | None, what: str) -> FileRecord:
    """The record a job refers to; a missing reference fails the job, it never crashes."""
    if file_id is None:
        raise MissingFile(f"the job has no {what} file")
    try:
        return await services.repo.get_file(file_id)
    except FileNotFound:
        raise MissingFile(f"the {what} file of the job no longer exists") from None


async def convert(job: Job, services: Services) -> Job:
    """Convert the recording to mono Ogg/Opus and measure its duration."""
    source = await load_file(services, job.source_file_id, "source")
    files = services.files
    extension = services.converter.output_extension
    try:
        async with files.working_copy(source) as path, files.staging(extension) as target:
            duration = await services.converter.convert(path, target)
            record = await files.put(
                derived_file_id(job.id, CONVERTED),
                extension,
                target,
                now=services.clock.now(),
                move=True,
            )
    except FileNotFound:
        raise MissingFile("the recording is missing from storage") from None
    # The record exists before the job points at it (SPEC §4.9); a retry
    # replaces both under the same id.
    await services.repo.put_file(record)
    return transition(
        job,
        State.RECOGNIZE,
        now=services.clock.now(),
        converted_file_id=record.id,
        duration=duration,
    )


async def recognize(job: Job, services: Services) -> Job:
    """Hand the converted audio to the recognizer, copying it to Object Storage first if needed."""
    audio = await load_file(services, job.converted_file_id, "converted")
    storage_file_id = None
    if services.recognizer_files is not None:
        try:
            async with services.files.working_copy(audio) as path:
                audio = await services.recognizer_files.put(
                    derived_file_id(job.id, STORAGE_COPY),
                    audio.extension,
                    path,
                    now=services.clock.now(),
                )
        except FileNotFound:
            raise MissingFile("the converted audio is missing from storage") from None
        await services.repo.put_file(audio)
        storage_file_id = audio.id
    started = await services.recognizer.start(audio, duration=job.duration)
    now = services.clock.now()
    match started.outcome:
        case Recognized(text=text, words=words, language=language):
            # A recognizer that worked while it started (ADR 24): nothing to check.
            return transition(
                job,
                State.DONE,
                now=now,
                operation_id=started.operation_id,
                storage_file_id=storage_file_id,
                text=text,
                words=words,
                language=language,
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


async def check(job: Job, services: Services) -> Job:
    """Ask the recognizer about the operation; store the text as soon as it is done."""
    if job.operation_id is None:
        raise RecognitionFailed("the job has no recognition operation to check")
    result = await services.recognizer.check(job.operation_id)
    now = services.clock.now()
    match result:
        case Pending(retry_after=retry_after):
            delay = next_check_delay(retry_after, services.settings)
            return transition(job, State.CHECK, now=now, delay_until=now + delay)
        case Recognized(text=text, words=words, language=language):
            return transition(job, State.DONE, now=now, text=text, words=words, language=language)
        case Rejected(reason=reason):
            raise RecognitionFailed(reason)


#: The step that works on each step state.
STEPS: dict[State, Step] = {
    State.CONVERT: convert,
    State.RECOGNIZE: recognize,
    State.CHECK: check,
}
