"""The offline diarizer on espeak-ng dialogues: attribution error, the count found, time, RSS.

Prints its figures; the numbers in docs/benchmarks.md come from here.

Dialogues are ``tests/support/dialogue.conversation``: lines of
``tests/support/speech.STORY`` said in turn by two (or three) clearly
different espeak-ng voices, joined with a 0.4 s pause, so every turn
boundary and every word's speaker is known. For each dialogue the diarizer
runs twice, told the count and with ``auto``, and the words (timed evenly
across their line) are labelled as the pipeline labels them
(``speakers.label_words``):

- attribution error: the share of words given the wrong speaker under the
  best matching of found labels to true voices (every mapping tried);
- count: how many speakers ``auto`` found.

Time and memory: a two-voice dialogue looped with ffmpeg to each length
asked, diarized in a fresh child process; the figures are wall and CPU
seconds (the child's user + system time, which a loaded box does not
inflate as much) over the recording's seconds, and the child's peak RSS
(``ru_maxrss``). Model loading and imports are included.

Usage: .venv/bin/python bench/diarization.py [--dialogues 10] [--voices 2 3]
       [--minutes 5 20] [--turns 8]
"""

from __future__ import annotations

import sys
from pathlib import Path

# bench/queue.py would shadow the stdlib ``queue`` that asyncio's thread pool imports.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import argparse
import asyncio
import itertools
import json
import subprocess
import tempfile
import time

from tests.support.dialogue import conversation
from tests.support.media import FFMPEG

from transcriber_adapters.diarization import OfflineDiarizer
from transcriber_core.entities import Word
from transcriber_core.speakers import label_words


def attribution_error(truth: tuple[Word, ...], found: tuple[Word, ...]) -> float:
    """Share of words whose label maps to the wrong voice, under the best mapping."""
    labels = sorted({w.speaker for w in found if w.speaker is not None})
    voices = sorted({w.speaker for w in truth if w.speaker is not None})
    best = len(truth)
    for mapping in itertools.product(voices, repeat=len(labels)):
        chosen = dict(zip(labels, mapping, strict=True))
        wrong = sum(
            chosen.get(g.speaker or "") != t.speaker for t, g in zip(truth, found, strict=True)
        )
        best = min(best, wrong)
    return best / max(len(truth), 1)


async def quality(folder: Path, dialogues: int, voices: int, turns: int) -> None:
    diarizer = OfflineDiarizer()
    if dialogues == 0:
        return
    errors_told, errors_auto, counts, ratios = [], [], [], []
    for seed in range(dialogues):
        made = conversation(folder / f"{voices}-{seed}.ogg", voices=voices, turns=turns, seed=seed)
        began = time.perf_counter()
        told = (await diarizer.diarize(made.audio, speakers=voices)).turns
        ratios.append((time.perf_counter() - began) / made.duration)
        auto = (await diarizer.diarize(made.audio, speakers=None)).turns
        words_told, _ = label_words(made.words, told)
        words_auto, found = label_words(made.words, auto)
        errors_told.append(attribution_error(made.words, words_told))
        errors_auto.append(attribution_error(made.words, words_auto))
        counts.append(len(found))
    right = sum(count == voices for count in counts)
    print(
        f"{voices} voices, {dialogues} dialogues of {turns} turns:"
        f" error told {100 * sum(errors_told) / dialogues:.1f} %"
        f" (worst {100 * max(errors_told):.1f} %),"
        f" error auto {100 * sum(errors_auto) / dialogues:.1f} %,"
        f" auto found {counts} (right {right}/{dialogues}),"
        f" time/duration median {sorted(ratios)[len(ratios) // 2]:.3f}"
    )


CHILD = """
import asyncio, json, resource, sys, time
from pathlib import Path
from transcriber_adapters.diarization import OfflineDiarizer
path, seconds = Path(sys.argv[1]), float(sys.argv[2])
began = time.perf_counter()
turns = asyncio.run(OfflineDiarizer().diarize(path, speakers=None)).turns
wall = time.perf_counter() - began
usage = resource.getrusage(resource.RUSAGE_SELF)
print(json.dumps({"wall": wall, "turns": len(turns), "labels": len({t.speaker for t in turns}),
                  "cpu": usage.ru_utime + usage.ru_stime, "rss_mib": usage.ru_maxrss / 1024}))
"""


def scale(folder: Path, minutes: list[float]) -> None:
    base = conversation(folder / "base.ogg", voices=2, turns=10, seed=1).audio
    for length in minutes:
        seconds = length * 60
        audio = folder / f"long-{length:g}.ogg"
        # The dialogue's own Opus packets repeated: no re-encoding, seconds for an hour.
        subprocess.run(
            [
                *(FFMPEG, "-nostdin", "-loglevel", "error", "-y", "-stream_loop", "-1"),
                *("-i", str(base), "-t", str(seconds), "-c", "copy", str(audio)),
            ],
            check=True,
        )
        out = subprocess.run(
            [sys.executable, "-c", CHILD, str(audio), str(seconds)],
            check=True,
            capture_output=True,
            text=True,
        )
        found = json.loads(out.stdout.strip().splitlines()[-1])
        print(
            f"{length:g} min: {found['wall']:.1f} s wall ({found['wall'] / seconds:.3f} x),"
            f" {found['cpu']:.1f} s CPU ({found['cpu'] / seconds:.3f} x duration),"
            f" peak RSS {found['rss_mib']:.0f} MiB, {found['turns']} turns,"
            f" {found['labels']} voices found"
        )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--dialogues", type=int, default=10)
    parser.add_argument("--voices", type=int, nargs="*", default=[2, 3])
    parser.add_argument("--turns", type=int, default=8)
    parser.add_argument("--minutes", type=float, nargs="*", default=[5.0, 20.0])
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-diarization-") as tmp:
        folder = Path(tmp)
        for voices in args.voices:
            asyncio.run(quality(folder, args.dialogues, voices, args.turns))
        scale(folder, args.minutes)


if __name__ == "__main__":
    main()
