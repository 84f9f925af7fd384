"""The contract every Diarizer adapter passes (SPEC §18, §25)."""

from __future__ import annotations

import asyncio
import itertools
import math
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

import attrs
import pytest

from transcriber_core.entities import Turn, Word
from transcriber_core.ports import Diarizer
from transcriber_core.speakers import label_words


class DiarizerDriver(Protocol):
    """Tells the diarizer's backend the answer for a recording, where it needs telling."""

    def tell(self, audio: Path, turns: Sequence[Turn]) -> None:
        """Who speaks when in ``audio``; a diarizer that listens ignores it."""
        ...


@attrs.frozen(kw_only=True)
class Recording:
    """A recording with its answer: the turns and the words, each word's ``speaker`` the truth."""

    audio: Path
    turns: tuple[Turn, ...]
    words: tuple[Word, ...]
    duration: float


@attrs.frozen(kw_only=True)
class DiarizerCase:
    """What the suite needs: the adapter, its driver and recordings with known answers."""

    diarizer: Diarizer
    driver: DiarizerDriver
    #: Two clearly different voices taking turns.
    two_voices: Recording
    #: Three clearly different voices taking turns.
    three_voices: Recording
    #: A recording with no speech at all.
    silence: Path
    #: It has a speaker encoder: each voice it finds comes with a print (SPEC §25).
    measures_voices: bool = True


def _majorities(recording: Recording, words: Sequence[Word]) -> list[str | None]:
    """The label most of each true turn's words got, turn by turn."""
    found = []
    for turn in recording.turns:
        labels = Counter(
            got.speaker
            for truth, got in zip(recording.words, words, strict=True)
            if turn.start <= (truth.start + truth.end) / 2 < turn.end
        )
        found.append(labels.most_common(1)[0][0] if labels else None)
    return found


class DiarizerContract:
    """Subclass with a ``case`` fixture returning a ``DiarizerCase``."""

    async def _labelled(
        self, case: DiarizerCase, recording: Recording, speakers: int | None
    ) -> tuple[tuple[Word, ...], int]:
        case.driver.tell(recording.audio, recording.turns)
        found = await case.diarizer.diarize(recording.audio, speakers=speakers)
        words, speakers_found = label_words(recording.words, found.turns)
        return words, len(speakers_found)

    async def test_two_voices_asked_for_two(self, case: DiarizerCase) -> None:
        """Asked for two voices, each turn goes to one of two speakers, neighbours differing."""
        words, count = await self._labelled(case, case.two_voices, 2)
        assert count == 2
        majorities = _majorities(case.two_voices, words)
        truth = [turn.speaker for turn in case.two_voices.turns]
        same_truth = [a == b for a, b in itertools.pairwise(truth)]
        same_found = [a == b for a, b in itertools.pairwise(majorities)]
        assert same_found == same_truth

    async def test_auto_finds_how_many(self, case: DiarizerCase) -> None:
        """Not told the count, it finds two voices in a dialogue and three in a conversation."""
        _, two = await self._labelled(case, case.two_voices, None)
        _, three = await self._labelled(case, case.three_voices, None)
        assert (two, three) == (2, 3)

    async def test_three_voices_told_apart(self, case: DiarizerCase) -> None:
        """Three voices asked for: the turns of one voice share a label no other voice's has."""
        words, count = await self._labelled(case, case.three_voices, 3)
        assert count == 3
        majorities = _majorities(case.three_voices, words)
        pairs = set(zip((t.speaker for t in case.three_voices.turns), majorities, strict=True))
        assert len(pairs) == 3

    async def test_one_speaker_asked(self, case: DiarizerCase) -> None:
        """Asked for one voice, every word has the same speaker however many spoke."""
        words, count = await self._labelled(case, case.two_voices, 1)
        assert count == 1
        assert len({word.speaker for word in words}) == 1

    async def test_turns_lie_inside_the_recording(self, case: DiarizerCase) -> None:
        """Every turn starts before it ends, within the recording's length."""
        recording = case.three_voices
        case.driver.tell(recording.audio, recording.turns)
        turns = (await case.diarizer.diarize(recording.audio, speakers=None)).turns
        assert turns
        for turn in turns:
            assert 0 <= turn.start < turn.end <= recording.duration + 1.0

    async def test_silence_has_no_turns(self, case: DiarizerCase) -> None:
        """A recording without speech has no turns, so its words stay unlabelled."""
        found = await case.diarizer.diarize(case.silence, speakers=None)
        assert (found.turns, dict(found.prints)) == ((), {})

    async def test_prints_are_unit_length_one_per_voice(self, case: DiarizerCase) -> None:
        """Each voice found has a print of length 1 (a diarizer with an encoder), or none has."""
        recording = case.three_voices
        case.driver.tell(recording.audio, recording.turns)
        found = await case.diarizer.diarize(recording.audio, speakers=3)
        labels = {turn.speaker for turn in found.turns}
        if not case.measures_voices:
            assert dict(found.prints) == {}
            return
        assert set(found.prints) == labels
        assert len({len(vector) for vector in found.prints.values()}) == 1
        for vector in found.prints.values():
            assert math.fsum(x * x for x in vector) == pytest.approx(1.0, abs=1e-6)

    async def test_cancelled_promptly(self, case: DiarizerCase) -> None:
        """A cancelled diarization ends at once with CancelledError, not after the recording."""
        recording = case.three_voices
        case.driver.tell(recording.audio, recording.turns)
        task = asyncio.create_task(case.diarizer.diarize(recording.audio, speakers=None))
        await asyncio.sleep(0)
        task.cancel()
        loop = asyncio.get_running_loop()
        began = loop.time()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert loop.time() - began < 5.0
