"""Who said what (SPEC §18, ADR 45): the speakers a sender asks for, words labelled by turns.

A ``Diarizer`` (the port) says who speaks when, as turns with labels of its
own; ``label_words`` gives each word the speaker whose turns overlap it most
(the nearest turn when none does) and numbers the speakers ``S1``, ``S2``…
in the order of their first word, each named "Speaker N" until the owner
renames them (``rename``). Pure rules, no I/O; ``diarize`` is the step's use
of the port, which keeps each speaker's print and names the speakers whose
prints match the job owner's remembered voices (SPEC §25, ADR 72).
"""

from __future__ import annotations

import bisect
import itertools
import logging
import unicodedata
from collections.abc import Mapping, Sequence

import attrs

from transcriber_core.entities import (
    AUTO_SPEAKERS,
    Diarization,
    Job,
    Print,
    Speaker,
    SpeakerPrint,
    Turn,
    Word,
)
from transcriber_core.errors import FileNotFound, MissingFile
from transcriber_core.prints import match, named, unit
from transcriber_core.services import Services

log = logging.getLogger(__name__)

#: The most speakers a sender may ask for.
MAX_SPEAKERS = 10
#: The longest name a speaker may be given, in characters.
MAX_NAME_CHARS = 64
#: What the ``speakers`` field takes besides a count.
OFF, AUTO = "off", "auto"


class BadSpeakers(ValueError):  # noqa: N818 - named for the HTTP code, bad_speakers
    """A ``speakers`` value or a rename that is refused; the message says why (HTTP 400)."""


#: The most digits a ``speakers`` count is read from (``010`` is ten; nine digits is plenty).
_MOST_DIGITS = 9


def parse_wanted(value: str) -> int | None:
    """The ``speakers`` field as ``Job.speakers_wanted``: ``off`` None, ``auto`` 0, else 1 to 10."""
    text = value.strip().lower()
    if text == OFF:
        return None
    if text == AUTO:
        return AUTO_SPEAKERS
    # Bounded before int(): past 4,300 digits it raises a plain ValueError (was a 500).
    digits = text.isascii() and text.isdigit() and len(text) <= _MOST_DIGITS
    if digits and 1 <= int(text) <= MAX_SPEAKERS:
        return int(text)
    raise BadSpeakers(f"speakers must be auto, off or a number from 1 to {MAX_SPEAKERS}")


def wanted_text(wanted: int | None) -> str:
    """``Job.speakers_wanted`` as the ``speakers`` field spells it."""
    if wanted is None:
        return OFF
    return AUTO if wanted == AUTO_SPEAKERS else str(wanted)


def default_name(speaker_id: str) -> str:
    """ "Speaker 1" for ``S1``."""
    return f"Speaker {speaker_id.removeprefix('S')}"


def label_words(
    words: Sequence[Word], turns: Sequence[Turn]
) -> tuple[tuple[Word, ...], tuple[Speaker, ...]]:
    """``words`` each with the speaker of the turns overlapping it most, and those speakers.

    A word no turn overlaps takes the nearest turn's speaker. Speakers are
    ``S1``… in the order of their first word; a voice with no word is left
    out. Without turns the words come back unlabelled, with no speakers.
    """
    labelled, speakers, _ = _label(words, turns)
    return labelled, speakers


def _label(
    words: Sequence[Word], turns: Sequence[Turn]
) -> tuple[tuple[Word, ...], tuple[Speaker, ...], dict[str, str]]:
    """``label_words``, and which speaker id each turn label became."""
    ordered = sorted((t for t in turns if t.end > t.start), key=lambda t: (t.start, t.end))
    if not ordered or not words:
        return tuple(attrs.evolve(w, speaker=None) for w in words), (), {}
    starts = [turn.start for turn in ordered]
    # reach[i]: the latest end among turns[: i + 1], to stop looking back in time.
    reach = list(itertools.accumulate((turn.end for turn in ordered), max))
    ids: dict[str, str] = {}
    labelled = []
    for word in words:
        label = _best_label(word, ordered, starts, reach)
        speaker_id = ids.setdefault(label, f"S{len(ids) + 1}")
        labelled.append(attrs.evolve(word, speaker=speaker_id))
    speakers = tuple(Speaker(id=i, name=default_name(i)) for i in ids.values())
    return tuple(labelled), speakers, ids


def number_speakers(words: Sequence[Word]) -> tuple[tuple[Word, ...], tuple[Speaker, ...]]:
    """``words`` with a recognizer's own speaker labels renumbered ``S1``… by first word.

    A word without a label keeps none; the speakers are those of the labelled words.
    """
    numbered, speakers, _ = _number(words)
    return numbered, speakers


def _number(
    words: Sequence[Word],
) -> tuple[tuple[Word, ...], tuple[Speaker, ...], dict[str, str]]:
    """``number_speakers``, and which speaker id each of the recognizer's labels became."""
    ids: dict[str, str] = {}
    numbered = []
    for word in words:
        if word.speaker is None:
            numbered.append(word)
            continue
        speaker_id = ids.setdefault(word.speaker, f"S{len(ids) + 1}")
        numbered.append(attrs.evolve(word, speaker=speaker_id))
    speakers = tuple(Speaker(id=i, name=default_name(i)) for i in ids.values())
    return tuple(numbered), speakers, ids


def _best_label(
    word: Word, turns: Sequence[Turn], starts: Sequence[float], reach: Sequence[float]
) -> str:
    """The label of the turns that overlap ``word`` longest, else of the nearest turn."""
    overlap: dict[str, float] = {}
    # Turns are sorted by start: those starting after the word ends cannot overlap it,
    # and looking back stops where no earlier turn reaches the word's start.
    index = bisect.bisect_left(starts, word.end)
    below = index
    while index > 0 and reach[index - 1] > word.start:
        index -= 1
        turn = turns[index]
        shared = min(turn.end, word.end) - max(turn.start, word.start)
        if shared > 0:
            overlap[turn.speaker] = overlap.get(turn.speaker, 0.0) + shared
    if overlap:
        return max(overlap, key=lambda label: overlap[label])
    # In a gap: the turn that ended last before the word, or the one starting after it.
    middle = (word.start + word.end) / 2
    nearby = turns[max(0, below - 2) : below + 1]
    nearest = min(nearby, key=lambda t: max(t.start - middle, middle - t.end, 0.0))
    return nearest.speaker


def check_name(name: str) -> str:
    """``name`` stripped, or ``BadSpeakers`` saying what is wrong with it."""
    cleaned = name.strip()
    if not cleaned:
        raise BadSpeakers("a speaker's name must not be empty")
    if len(cleaned) > MAX_NAME_CHARS:
        raise BadSpeakers(f"a speaker's name must be at most {MAX_NAME_CHARS} characters")
    if any(unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp") for c in cleaned):
        raise BadSpeakers("a speaker's name must not contain control characters")
    return cleaned


def rename(speakers: Sequence[Speaker], names: Mapping[str, object]) -> tuple[Speaker, ...]:
    """``speakers`` with the new ``names`` by id; ``BadSpeakers`` for an unknown id or bad name."""
    known = {speaker.id for speaker in speakers}
    if not names:
        raise BadSpeakers('name at least one speaker, as {"S1": "Diane"}')
    checked: dict[str, str] = {}
    for speaker_id, name in names.items():
        if speaker_id not in known:
            raise BadSpeakers(f"the job has no speaker {speaker_id[:16]!r}")
        if not isinstance(name, str):
            raise BadSpeakers(f"the name of {speaker_id} must be a string")
        checked[speaker_id] = check_name(name)
    return tuple(attrs.evolve(s, name=checked.get(s.id, s.name)) for s in speakers)


async def rename_speakers(services: Services, seen: Job, new: Mapping[str, object]) -> Job:
    """Give the speakers of the job the caller read (``seen``) the ``new`` names; saved or not.

    Checked first (``BadSpeakers``, nothing written). Saved only if the stored
    job is still ``seen`` (ADR 23): a change since raises ``JobChanged`` and
    writes nothing. Raises ``JobNotFound`` when the job is gone.
    """
    renamed = attrs.evolve(seen, speakers=rename(seen.speakers, new), updated=services.clock.now())
    await services.jobs.save_if_unchanged(renamed, seen=seen)
    return renamed


def labels_speakers(services: Services) -> bool:
    """True when a job that wants speakers gets them: a diarizer, or a recognizer that labels."""
    return services.diarizer is not None or services.recognizer.abilities.speakers


def names(job: Job) -> dict[str, str]:
    """Each speaker's id with the name shown for it."""
    return {speaker.id: speaker.name for speaker in job.speakers}


@attrs.frozen(kw_only=True)
class Labelled:
    """A recording's words with their speakers, and each speaker's print when measured."""

    words: tuple[Word, ...]
    speakers: tuple[Speaker, ...] = ()
    prints: tuple[SpeakerPrint, ...] = attrs.field(default=(), repr=False)


def _prints_by_id(prints: Mapping[str, Print], ids: Mapping[str, str]) -> tuple[SpeakerPrint, ...]:
    """The prints of labels that became speakers, under the speakers' ids, in id order."""
    return tuple(
        SpeakerPrint(speaker=speaker_id, vector=unit(prints[label]))
        for label, speaker_id in ids.items()
        if label in prints
    )


def hears_early(job: Job, services: Services) -> bool:
    """True when the diarizer is to hear ``job``'s audio beside its parts' recognition (ADR 89).

    A job that wants speakers, with a diarizer and a recognizer that does not
    label them itself, not heard yet.
    """
    return (
        job.speakers_wanted is not None
        and job.heard is None
        and services.diarizer is not None
        and not services.recognizer.abilities.speakers
    )


async def hear(job: Job, services: Services) -> Diarization:
    """Who speaks when in the job's converted audio: the diarizer's turns and prints.

    Needs no words, so a split recording's audio is heard while its parts
    are recognised (ADR 89). The diarizer honours cancellation.
    """
    if services.diarizer is None:
        return Diarization()
    if job.converted_file_id is None:
        raise MissingFile("the job has no converted audio to tell the speakers in")
    audio = await services.file_records.get_file(job.converted_file_id)
    wanted = None if job.speakers_wanted == AUTO_SPEAKERS else job.speakers_wanted
    try:
        async with services.files.working_copy(audio) as path:
            return await services.diarizer.diarize(path, speakers=wanted)
    except FileNotFound:
        raise MissingFile("the converted audio is missing from storage") from None


async def diarize(
    job: Job, services: Services, words: tuple[Word, ...], prints: Mapping[str, Print] | None = None
) -> Labelled:
    """The job's ``words`` labelled with speakers, when the job asked and a diarizer is set.

    Runs in the step that ends the recognition, on the converted audio,
    before the job is stored done; the diarizer honours cancellation. Words
    the recognizer labelled itself keep its labels, numbered ``S1``…, with
    the ``prints`` it gave for them. A job without word timings, or that
    asked for none, keeps its words unlabelled. Speakers whose prints match
    the job owner's remembered voices are named after them (SPEC §25).
    """
    if job.speakers_wanted is None:
        # A recognizer may label speakers unasked (SpeechKit v3 tags every result): not wanted.
        return Labelled(
            words=tuple(w if w.speaker is None else attrs.evolve(w, speaker=None) for w in words)
        )
    if any(word.speaker is not None for word in words):
        # The recognizer told the speakers itself (SpeechKit v3, ADR 54): no diarizer needed.
        numbered, speakers, ids = _number(words)
        return await _recognised(
            job, services, Labelled(words=numbered, speakers=speakers), ids, prints or {}
        )
    if services.diarizer is None or not words:
        return Labelled(words=words)
    # A split recording was heard beside its parts' recognition (ADR 89).
    found = job.heard if job.heard is not None else await hear(job, services)
    labelled, speakers, ids = _label(words, found.turns)
    log.info("job.diarized", extra={"job_id": job.id, "speakers": len(speakers)})
    heard = Labelled(words=labelled, speakers=speakers)
    return await _recognised(job, services, heard, ids, found.prints)


async def _recognised(
    job: Job,
    services: Services,
    labelled: Labelled,
    ids: Mapping[str, str],
    prints: Mapping[str, Print],
) -> Labelled:
    """``labelled`` with its speakers' prints, the speakers that match voices named after them."""
    kept = _prints_by_id(prints, ids)
    speakers = await recognise_voices(services, job, labelled.speakers, kept)
    return attrs.evolve(labelled, speakers=speakers, prints=kept)


async def recognise_voices(
    services: Services, job: Job, speakers: tuple[Speaker, ...], prints: tuple[SpeakerPrint, ...]
) -> tuple[Speaker, ...]:
    """``speakers`` of the owner's new recording, named after the owner's voices they match.

    A job with no owner, or no prints, or an owner with no voices, keeps
    its speakers as they are. Only the job owner's voices are read.
    """
    if services.voices is None or job.owner is None or not prints or not speakers:
        return speakers
    kept = await services.voices.voice_prints(job.owner)
    if not kept:
        return speakers
    by_speaker = {p.speaker: p.vector for p in prints}
    found = match(by_speaker, kept, threshold=services.settings.voice_match)
    if found:
        log.info("job.voices_matched", extra={"job_id": job.id, "count": len(found)})
    return named(speakers, found)
