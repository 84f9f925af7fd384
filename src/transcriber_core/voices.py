"""Voices remembered (SPEC §25, ADR 72): a recording's speaker kept as a named voice, matched later.

A voice is its owner's: made from a speaker of one of the owner's done
recordings (that speaker's print, kept with the job), grown by more such
samples, renamed, deleted; the matching of new recordings against it is
``speakers.diarize``'s (``prints.match``). A print is biometric data (ADR 73):
these use cases pass prints from the job to the ``VoiceStore`` and never
return, log or show one.
"""

from __future__ import annotations

import contextlib
import logging

import attrs

from transcriber_core.entities import Job, Print, State, Voice
from transcriber_core.errors import JobChanged, JobNotFound, VoiceNotFound, VoiceRefused
from transcriber_core.ports import VoiceStore
from transcriber_core.prints import named, unit
from transcriber_core.services import Services
from transcriber_core.speakers import BadSpeakers, check_name

log = logging.getLogger(__name__)


def print_of(job: Job, speaker_id: object) -> Print:
    """The print of ``speaker_id`` in ``job``, or ``VoiceRefused`` saying why there is none."""
    if job.state is not State.DONE:
        raise VoiceRefused("the recording is not transcribed yet", code="not_done")
    if not job.speakers:
        raise VoiceRefused("the recording's speakers were not labelled", code="no_speakers")
    if not isinstance(speaker_id, str) or all(s.id != speaker_id for s in job.speakers):
        raise VoiceRefused(
            "speaker must be one of the recording's speakers: "
            + ", ".join(s.id for s in job.speakers),
            code="bad_speaker",
        )
    for kept in job.prints:
        if kept.speaker == speaker_id:
            return kept.vector
    raise VoiceRefused(
        "this speaker's voice was not measured (the recording was labelled without a speaker"
        " encoder)",
        code="bad_speaker",
    )


def voice_name(name: object) -> str:
    """A voice's name checked as a speaker's is (SPEC §18), or ``VoiceRefused`` ``bad_name``."""
    if not isinstance(name, str):
        raise VoiceRefused("name must be a string", code="bad_name")
    try:
        return check_name(name)
    except BadSpeakers as exc:
        message = str(exc).replace("a speaker's name", "a voice's name")
        raise VoiceRefused(message, code="bad_name") from None


async def _owned_job(services: Services, owner: str, job_id: str) -> Job:
    """The owner's job ``job_id``; ``JobNotFound`` for anyone else's, as for an unknown id."""
    job = await services.jobs.get(job_id, owned_by=owner)
    if job.owner != owner:
        raise JobNotFound()
    return job


async def _name_in_recording(services: Services, job: Job, speaker_id: str, voice: Voice) -> None:
    """Name the speaker the voice was made from after it, in that recording; once, or not at all.

    A rename in between (``JobChanged``) wins: the voice exists either way.
    """
    renamed = named(job.speakers, {speaker_id: voice})
    with contextlib.suppress(JobChanged, JobNotFound):
        await services.jobs.save_if_unchanged(
            attrs.evolve(job, speakers=renamed, updated=services.clock.now()), seen=job
        )


async def remember_voice(
    services: Services,
    voices: VoiceStore,
    *,
    owner: str,
    job_id: str,
    speaker: object,
    name: object,
) -> Voice:
    """Make the owner's ``speaker`` of ``job_id`` a voice called ``name`` (one sample).

    Raises ``JobNotFound`` (not the owner's), ``VoiceRefused`` (``not_done``,
    ``no_speakers``, ``bad_speaker``, ``bad_name``). That speaker is named
    after the new voice in its recording.
    """
    checked = voice_name(name)
    job = await _owned_job(services, owner, job_id)
    vector = print_of(job, speaker)
    voice = Voice(id=services.ids.new_id(), owner=owner, name=checked, created=services.clock.now())
    await voices.add_voice(voice, unit(vector))
    log.info("voice.remembered", extra={"voice_id": voice.id, "job_id": job.id})
    await _name_in_recording(services, job, str(speaker), voice)
    return voice


async def add_sample(
    services: Services,
    voices: VoiceStore,
    *,
    owner: str,
    voice_id: str,
    job_id: str,
    speaker: object,
) -> Voice:
    """Add the owner's ``speaker`` of ``job_id`` to the owner's voice ``voice_id``.

    Raises ``VoiceNotFound``, ``JobNotFound``, ``VoiceRefused``; the speaker
    is named after the voice in its recording.
    """
    job = await _owned_job(services, owner, job_id)
    vector = print_of(job, speaker)
    voice = await voices.add_sample(owner, voice_id, vector)
    if voice is None:
        raise VoiceNotFound()
    log.info("voice.sample_added", extra={"voice_id": voice.id, "job_id": job.id})
    await _name_in_recording(services, job, str(speaker), voice)
    return voice


async def rename_voice(voices: VoiceStore, *, owner: str, voice_id: str, name: object) -> Voice:
    """The owner's voice renamed; recordings already named keep their names (SPEC §25)."""
    voice = await voices.rename_voice(owner, voice_id, voice_name(name))
    if voice is None:
        raise VoiceNotFound()
    return voice


async def delete_voice(voices: VoiceStore, *, owner: str, voice_id: str) -> None:
    """Delete the owner's voice and its print; ``VoiceNotFound`` when there is none."""
    if not await voices.delete_voice(owner, voice_id):
        raise VoiceNotFound()
    log.info("voice.deleted", extra={"voice_id": voice_id})
