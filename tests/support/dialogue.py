"""Dialogues with known answers (the diarizer contract's ``Recording``), said by espeak-ng.

Each line is said by its voice to a WAV, the WAVs are joined with a pause
between them (stdlib ``wave``: the turn boundaries are exact to the sample),
and the whole becomes Ogg/Opus the way the convert step makes it.
"""

from __future__ import annotations

import subprocess
import wave
from collections.abc import Sequence
from pathlib import Path

from tests.support.speech import STORY, espeak, opus
from transcriber_contracts.diarizer import Recording
from transcriber_core.entities import Turn, Word

#: Voices that sound clearly different: espeak-ng's voices with its variants.
VOICES = ("en-us+m7", "en-us+f2", "en-us+klatt")
#: Silence between two turns, in seconds.
PAUSE = 0.4


def dialogue(
    target: Path, lines: Sequence[tuple[int, str]], *, voices: Sequence[str] = VOICES
) -> Recording:
    """``lines`` (voice index, text) said in turn, as ``target`` (Ogg/Opus), with the answer."""
    target.parent.mkdir(parents=True, exist_ok=True)
    frames: list[bytes] = []
    turns: list[Turn] = []
    words: list[Word] = []
    rate = width = 0
    at = 0.0
    for number, (voice, text) in enumerate(lines):
        wav = target.with_name(f"{target.stem}-{number}.wav")
        subprocess.run(
            [espeak(), "-v", voices[voice], "-s", "160", "-w", str(wav), text],
            check=True,
            capture_output=True,
            timeout=30,
        )
        with wave.open(str(wav)) as said:
            rate, width = said.getframerate(), said.getsampwidth()
            data = said.readframes(said.getnframes())
        wav.unlink()
        seconds = len(data) / (rate * width)
        turns.append(Turn(speaker=str(voice), start=at, end=at + seconds))
        spoken = text.split()
        for index, word in enumerate(spoken):
            start = at + seconds * index / len(spoken)
            words.append(
                Word(text=word, start=start, end=start + seconds / len(spoken), speaker=str(voice))
            )
        frames.append(data)
        frames.append(b"\0" * (int(PAUSE * rate) * width))
        at += seconds + int(PAUSE * rate) / rate
    joined = target.with_suffix(".wav")
    with wave.open(str(joined), "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(width)
        out.setframerate(rate)
        out.writeframes(b"".join(frames))
    opus(joined, target)
    joined.unlink()
    return Recording(audio=target, turns=tuple(turns), words=tuple(words), duration=at)


def conversation(target: Path, *, voices: int = 2, turns: int = 8, seed: int = 0) -> Recording:
    """A dialogue of ``turns`` lines of ``STORY`` between ``voices`` voices, taking turns."""
    lines = [
        ((index + seed) % voices if voices > 1 else 0, STORY[(index + seed) % len(STORY)])
        for index in range(turns)
    ]
    # The seed shifts which voice opens, and which sentences they say.
    return dialogue(
        target, lines, voices=VOICES[seed % len(VOICES) :] + VOICES[: seed % len(VOICES)]
    )
