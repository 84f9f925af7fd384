"""Voice matching on real voices: same- and different-speaker similarity of the diarizer's prints.

Prints its figures; the numbers in docs/benchmarks.md come from here (SPEC §25, ADR 72).

Real human voices from Debian packages (no download): ``pocketsphinx-testdata``
(a LibriVox reader of *Sense and Sensibility*, 5 clips; the CMU "cards"
speaker, 5 clips; the CMU speaker of ``goforward``, ``numbers`` and
``something``, 3 clips) and ``festvox-ru`` (one Russian speaker; ``--ru`` clips).
Each clip (or each ``--join`` consecutive clips of one speaker joined, as a
speaker's share of a conversation) is diarized as one voice by the offline
adapter through its port (``speakers=1``), and its print is what the
pipeline keeps for a speaker. Every pair of prints is compared by cosine
similarity (``prints.similarity``): pairs of one speaker are "same", the
rest "different". For each threshold it prints the false-accept rate (a
different-speaker pair at or above it: another's voice would name this
speaker) and the false-reject rate (a same-speaker pair below it).

The figures are only as good as the set: four speakers here, so the
different-speaker pairs are pairs of those four. Encoder changes (ADR 69)
move every figure: rerun after one.

Usage: .venv/bin/python bench/voices.py [--ru 10] [--join 1]
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
import statistics
import subprocess
import tempfile

from tests.support.media import FFMPEG

from transcriber_adapters.diarization import OfflineDiarizer
from transcriber_core.entities import Print
from transcriber_core.prints import similarity

SPHINX = Path("/usr/share/pocketsphinx/test/data")
FESTVOX_RU = Path("/usr/share/festival/voices/russian/msu_ru_nsh_clunits/wav")


def speakers(ru: int) -> dict[str, list[Path]]:
    """Each real speaker's clips."""
    found = {
        "librivox": sorted((SPHINX / "librivox").glob("*.wav")),
        "cards": sorted((SPHINX / "cards").glob("*.wav")),
        "cmu": [SPHINX / name for name in ("goforward.raw", "numbers.raw", "something.raw")],
        "festvox-ru": sorted(FESTVOX_RU.glob("ru_*.wav"))[:ru],
    }
    missing = [name for name, clips in found.items() if not clips]
    if missing:
        raise SystemExit(
            f"no clips for {missing}: apt-get install pocketsphinx-testdata festvox-ru"
        )
    return found


def joined(clips: list[Path], join: int, folder: Path, name: str) -> list[Path]:
    """``clips`` joined ``join`` at a time into 16 kHz mono WAVs (one speaker's longer share)."""
    out = []
    for index in range(0, len(clips) - join + 1, join):
        group = clips[index : index + join]
        target = folder / f"{name}-{index}.wav"
        inputs = [arg for clip in group for arg in (*_format(clip), "-i", str(clip))]
        mix = "".join(f"[{i}:a]" for i in range(len(group))) + f"concat=n={len(group)}:v=0:a=1"
        subprocess.run(
            [
                FFMPEG,
                "-v",
                "error",
                "-y",
                *inputs,
                "-filter_complex",
                mix,
                "-ar",
                "16000",
                "-ac",
                "1",
                str(target),
            ],
            check=True,
        )
        out.append(target)
    return out


def _format(clip: Path) -> tuple[str, ...]:
    """ffmpeg's input options for ``clip``: headerless ``.raw`` files are 16 kHz s16le mono."""
    return ("-f", "s16le", "-ar", "16000", "-ac", "1") if clip.suffix == ".raw" else ()


async def prints_of(paths: list[Path]) -> list[Print]:
    """Each recording's print, as the diarizer gives it for one voice."""
    diarizer = OfflineDiarizer()
    found = []
    for path in paths:
        result = await diarizer.diarize(path, speakers=1)
        if result.prints:
            found.append(next(iter(result.prints.values())))
    return found


def summary(name: str, scores: list[float]) -> str:
    """Count, min, 5th percentile, median, 95th percentile and max of ``scores``."""
    ranked = sorted(scores)
    at = lambda q: ranked[min(len(ranked) - 1, int(q * len(ranked)))]  # noqa: E731
    return (
        f"{name}: n={len(ranked)} min={ranked[0]:.3f} p5={at(0.05):.3f}"
        f" median={statistics.median(ranked):.3f} p95={at(0.95):.3f} max={ranked[-1]:.3f}"
    )


def main() -> None:
    """Print the distributions and the error rates per threshold."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--ru", type=int, default=10, help="festvox-ru clips to use")
    parser.add_argument("--join", type=int, default=1, help="clips of one speaker per print")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        by_speaker = {
            name: asyncio.run(prints_of(joined(clips, args.join, folder, name)))
            for name, clips in speakers(args.ru).items()
        }
    for name, prints in by_speaker.items():
        print(f"{name}: {len(prints)} prints")
    same = [
        similarity(a, b)
        for prints in by_speaker.values()
        for a, b in itertools.combinations(prints, 2)
    ]
    different = [
        similarity(a, b)
        for (_, one), (_, other) in itertools.combinations(by_speaker.items(), 2)
        for a in one
        for b in other
    ]
    print(summary("same speaker", same))
    print(summary("different speakers", different))
    print("threshold  false-accept  false-reject")
    for step in range(0, 20):
        threshold = round(0.05 * step, 2)
        accept = sum(s >= threshold for s in different) / len(different)
        reject = sum(s < threshold for s in same) / len(same)
        print(f"{threshold:9.2f}  {100 * accept:11.1f} %  {100 * reject:11.1f} %")


if __name__ == "__main__":
    main()
