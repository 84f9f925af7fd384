"""Conversations of real human voices with known answers, built from Debian's speech packages.

SPEC §25: speaker work is developed and measured on real voices, since any
encoder tells espeak-ng's voices apart. The clips come from two Debian
packages that scripts/test installs (it fails loudly without them):

- ``pocketsphinx-testdata``: a LibriVox reader, the CMU "cards" speaker and
  a few other CMU recordings, 16 kHz;
- ``festvox-ru``: 620 sentences of one Russian speaker (MSU ``nsh``), with
  their texts.

A conversation is made deterministically from a seed: the chosen speakers
take turns in shuffled rounds, a turn being one or more of the speaker's
clips (trimmed of their leading and trailing silence) of ``MIN_TURN`` at least,
short gaps between turns, and now and then a turn that starts before the
last one ends (the two voices mixed). The answer is the turns (each clip's
stretches of speech, so two overlap where the voices do) and the words: a clip's text
spread evenly over its span, or a word every ``PSEUDO_WORD`` seconds where
the text is not known. Nothing is committed but this code.
"""

from __future__ import annotations

import functools
import random
import re
import wave
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import attrs

from tests.support.speech import opus
from transcriber_contracts.diarizer import Recording
from transcriber_core.entities import Turn, Word

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

RATE = 16000
POCKETSPHINX = Path("/usr/share/pocketsphinx/test/data")
FESTVOX_RU = Path("/usr/share/festival/voices/russian/msu_ru_nsh_clunits")
#: Seconds a word is taken to last where a clip's text is not known.
PSEUDO_WORD = 0.35
#: Silence between turns, seconds (a range the seed draws from).
GAPS = (0.15, 0.7)
#: How far a turn that overlaps starts before the last one ends, seconds.
OVERLAPS = (0.3, 0.8)
#: A 20-ms frame this far below a clip's loudest (dB) is not speech: the clips' noise floors
#: lie 29-68 dB down, their speech within 25 dB.
QUIET_DB = -28.0
#: A turn is at least this long (seconds): a short clip is followed by more of the same voice.
MIN_TURN = 2.5
#: Silence between two clips of one turn, seconds.
INSIDE_PAUSE = 0.25
#: A quiet stretch inside a clip at least this long (seconds) ends one reference turn; a
#: shorter one is a pause within the turn (the VAD too bridges 0.3 s, and pads 0.1 s).
PAUSE = 0.5


@attrs.frozen(kw_only=True)
class Clip:
    """One real recording of one speaker: its file, its text (may be empty)."""

    speaker: str
    path: Path
    text: str


def _require(folder: Path, package: str) -> Path:
    if not folder.is_dir():
        raise AssertionError(
            f"{folder} is missing: apt-get install {package} (scripts/test installs it)"
        )
    return folder


def _transcriptions(path: Path) -> dict[str, str]:
    """Sphinx transcription lines ``<s> text </s> (id)`` by id."""
    found = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        match = re.match(r"\s*(?:<s>)?(.*?)(?:</s>)?\s*\(([^)]+)\)\s*$", line)
        if match:
            found[match.group(2)] = match.group(1).strip()
    return found


@functools.cache
def speakers() -> dict[str, tuple[Clip, ...]]:
    """The real speakers and their clips, by a name of ours."""
    sphinx = _require(POCKETSPHINX, "pocketsphinx-testdata")
    ru = _require(FESTVOX_RU, "festvox-ru")
    libri = _transcriptions(sphinx / "librivox" / "transcription")
    cards = _transcriptions(sphinx / "cards" / "cards.transcription")
    texts = {}
    for line in (ru / "etc" / "txt.done.data").read_text(encoding="utf-8").splitlines():
        match = re.match(r'\(\s*(\S+)\s+"(.*)"\s*\)', line)
        if match:
            texts[match.group(1)] = re.sub(r"[^\w\s-]", " ", match.group(2).replace("+", ""))
    return {
        "librivox": tuple(
            Clip(speaker="librivox", path=sphinx / "librivox" / f"{key}.wav", text=text)
            for key, text in sorted(libri.items())
        ),
        "cards": tuple(
            Clip(speaker="cards", path=sphinx / "cards" / f"{key}.wav", text=text)
            for key, text in sorted(cards.items())
        ),
        "cmu": tuple(
            Clip(speaker="cmu", path=sphinx / name, text="")
            for name in ("goforward.raw", "numbers.raw", "something.raw")
        ),
        "nsh": tuple(
            Clip(speaker="nsh", path=ru / "wav" / f"{key}.wav", text=text)
            for key, text in sorted(texts.items())[:60]
        ),
    }


def samples(clip: Clip) -> npt.NDArray[np.float32]:
    """The clip's 16 kHz samples in [-1, 1], trimmed of silence at both ends."""
    import numpy as np  # noqa: PLC0415

    if clip.path.suffix == ".raw":
        data = clip.path.read_bytes()
    else:
        with wave.open(str(clip.path)) as read:
            assert read.getframerate() == RATE
            assert read.getnchannels() == 1
            data = read.readframes(read.getnframes())
    audio = np.frombuffer(data[: len(data) // 2 * 2], dtype="<i2").astype(np.float32) / 32768
    spans = spoken(audio)
    return audio[int(spans[0][0] * RATE) : int(spans[-1][1] * RATE)]


def spoken(audio: npt.NDArray[np.float32]) -> list[tuple[float, float]]:
    """Seconds of ``audio`` that hold speech: 20-ms frames within ``QUIET_DB`` of the loudest,
    runs joined across quiet stretches shorter than ``PAUSE``."""
    import numpy as np  # noqa: PLC0415

    frame = RATE // 50
    count = len(audio) // frame
    energy = (audio[: count * frame].reshape(count, frame) ** 2).mean(axis=1) + 1e-12
    loud = np.nonzero(10 * np.log10(energy / energy.max()) > QUIET_DB)[0]
    spans: list[tuple[float, float]] = []
    for index in loud.tolist():
        start, end = index * frame / RATE, (index + 1) * frame / RATE
        if spans and start - spans[-1][1] < PAUSE:
            spans[-1] = (spans[-1][0], end)
        else:
            spans.append((start, end))
    return spans


def conversation(
    target: Path,
    *,
    voices: Sequence[str] = ("librivox", "nsh"),
    turns: int = 8,
    seed: int = 0,
    overlap_every: int = 4,
) -> Recording:
    """``turns`` clips of ``voices`` taking turns as ``target`` (Ogg/Opus), with the answer.

    Every ``overlap_every``-th turn (0: none) starts before the last one ends.
    """
    import numpy as np  # noqa: PLC0415

    pick = random.Random(seed)
    clips = speakers()
    used = {voice: pick.sample(range(len(clips[voice])), len(clips[voice])) for voice in voices}
    taken = dict.fromkeys(voices, 0)
    # (start second, [(offset in the turn, clip, samples)], the turn's samples)
    placed: list[tuple[float, list[tuple[float, Clip, npt.NDArray[np.float32]]]]] = []
    at = 0.0
    for index, voice in enumerate(_speaking_order(voices, turns, pick)):
        parts: list[tuple[float, Clip, npt.NDArray[np.float32]]] = []
        length = 0.0
        while length < MIN_TURN:
            queue = used[voice]
            clip = clips[voice][queue[taken[voice] % len(queue)]]
            taken[voice] += 1
            audio = samples(clip)
            offset = length + (INSIDE_PAUSE if parts else 0.0)
            parts.append((offset, clip, audio))
            length = offset + len(audio) / RATE
        if placed and overlap_every and index % overlap_every == overlap_every - 1:
            start = max(placed[-1][0] + 0.5, at - pick.uniform(*OVERLAPS))
        else:
            start = at + (pick.uniform(*GAPS) if placed else 0.3)
        placed.append((start, parts))
        at = max(at, start + length)
    mixed = np.zeros(int((at + 0.3) * RATE) + 1, dtype=np.float32)
    recorded: list[tuple[list[Turn], list[Word]]] = []
    for start, parts in placed:
        for offset, clip, audio in parts:
            first = round((start + offset) * RATE)
            mixed[first : first + len(audio)] += audio
            begin, end = first / RATE, (first + len(audio)) / RATE
            spans = spoken(audio)
            turns_of = [
                Turn(speaker=clip.speaker, start=begin + a, end=begin + b) for a, b in spans
            ]
            recorded.append((turns_of, _words(clip, begin, end)))
    peak = float(np.abs(mixed).max()) or 1.0
    pcm = (np.clip(mixed / max(peak, 1.0), -1, 1) * 32767).astype("<i2")
    target.parent.mkdir(parents=True, exist_ok=True)
    wav = target.with_suffix(".wav")
    with wave.open(str(wav), "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(RATE)
        out.writeframes(pcm.tobytes())
    opus(wav, target)
    wav.unlink()
    words = sorted((w for _, ws in recorded for w in ws), key=lambda w: (w.start, w.end))
    return Recording(
        audio=target,
        turns=tuple(sorted((t for ts, _ in recorded for t in ts), key=lambda t: t.start)),
        words=tuple(words),
        duration=len(mixed) / RATE,
    )


def _speaking_order(voices: Sequence[str], turns: int, pick: random.Random) -> list[str]:
    """Rounds in which every voice speaks once, shuffled, never the same voice twice running."""
    order: list[str] = []
    while len(order) < turns:
        round_ = list(voices)
        pick.shuffle(round_)
        if order and round_[0] == order[-1]:
            round_.append(round_.pop(0))
        order.extend(round_)
    return order[:turns]


def _words(clip: Clip, begin: float, end: float) -> list[Word]:
    """The clip's words spread evenly over ``begin``-``end``, each with the clip's speaker."""
    said = clip.text.split() or ["…"] * max(1, round((end - begin) / PSEUDO_WORD))
    step = (end - begin) / len(said)
    return [
        Word(text=text, start=begin + i * step, end=begin + (i + 1) * step, speaker=clip.speaker)
        for i, text in enumerate(said)
    ]
