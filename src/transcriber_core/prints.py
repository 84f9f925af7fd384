"""Voice prints compared (SPEC §25, ADR 72): pure rules over tuples of floats, no I/O.

A print is a speaker embedding of unit length; a remembered voice keeps the
sum of its samples' unit prints. ``match`` pairs a recording's speakers with
an owner's voices one to one, best pair first, at or above a threshold
(``Settings.voice_match``); ``named`` gives the matched speakers their
voice's name and id. Nothing here logs or returns a print to a caller
outside the core (ADR 73).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import attrs

from transcriber_core.entities import Print, Speaker, Voice


def unit(vector: Sequence[float]) -> Print:
    """``vector`` scaled to length 1; all zeros stays all zeros."""
    norm = math.sqrt(math.fsum(x * x for x in vector))
    if norm == 0.0:
        return tuple(0.0 for _ in vector)
    return tuple(x / norm for x in vector)


def similarity(a: Sequence[float], b: Sequence[float]) -> float:
    """The cosine similarity of two prints; 0 for prints of different lengths or a zero print.

    Prints of different lengths come from different encoders (a voice kept
    before the encoder changed): they are not compared, so never matched.
    """
    if len(a) != len(b) or not a:
        return 0.0
    norms = math.sqrt(math.fsum(x * x for x in a)) * math.sqrt(math.fsum(y * y for y in b))
    if norms == 0.0:
        return 0.0
    return math.fsum(x * y for x, y in zip(a, b, strict=True)) / norms


def combined(total: Print, new: Print) -> Print:
    """A voice's print with one more sample: the sum of the samples' unit prints.

    A sample from another encoder (another length) starts the sum again:
    the old samples cannot be compared with anything the diarizer makes now.
    """
    addition = unit(new)
    if len(total) != len(addition):
        return addition
    return tuple(x + y for x, y in zip(total, addition, strict=True))


def match(
    prints: Mapping[str, Print], voices: Sequence[tuple[Voice, Print]], *, threshold: float
) -> dict[str, Voice]:
    """Speaker id -> the voice it is taken for: one voice to at most one speaker.

    Every (speaker, voice) pair at or above ``threshold`` is ranked by its
    similarity; the best pair is taken, its speaker and voice leave the
    ranking, and so on (greedy by best score). Ties go to the earlier voice
    and the earlier speaker, so the answer never depends on dict order.
    """
    ranked = sorted(
        (
            (-score, voice_index, speaker_id)
            for voice_index, (_, vector) in enumerate(voices)
            for speaker_id, speaker_print in sorted(prints.items())
            # Prints of another encoder (another length) are never compared.
            if len(speaker_print) == len(vector)
            and (score := similarity(speaker_print, vector)) >= threshold
        ),
    )
    taken: dict[str, Voice] = {}
    used: set[int] = set()
    for _, voice_index, speaker_id in ranked:
        if speaker_id in taken or voice_index in used:
            continue
        taken[speaker_id] = voices[voice_index][0]
        used.add(voice_index)
    return taken


def named(speakers: Sequence[Speaker], matches: Mapping[str, Voice]) -> tuple[Speaker, ...]:
    """``speakers`` with each matched one named after its voice and carrying its id."""
    return tuple(
        attrs.evolve(s, name=matches[s.id].name, voice_id=matches[s.id].id)
        if s.id in matches
        else s
        for s in speakers
    )
