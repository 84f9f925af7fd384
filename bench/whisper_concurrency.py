"""Whisper recognitions at once x threads each: which split of the CPUs serves a small box best.

Prints its figures; docs/benchmarks.md ("Whisper: recognitions at once and
threads", ADR 49) records them. Each setting runs in a fresh child process
through the service's own recognizer (``WhisperRecognizer`` with
``max_concurrent`` = ``[workers] recognize`` and ``threads`` =
``[whisper] threads``), the model loaded first, then:

- ``pair``: two 9-second clips started together (two senders at once): the
  wall time until both are done and the slower clip's latency;
- ``long``: one longer recording alone: its wall time.

Settings alternate round by round (A, B, C, A, B, C, ...) so a noisy box
shifts them alike; compare the ratios within a run.

Usage: .venv/bin/python bench/whisper_concurrency.py [--rounds 2] [--long-seconds 120]
       [--model base] [--settings 2x2,1x2,2x1]
"""

from __future__ import annotations

import sys
from pathlib import Path

# bench/queue.py would shadow the stdlib ``queue`` that asyncio's thread pool imports.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]

import argparse
import asyncio
import json
import os
import subprocess
import tempfile
import time
from datetime import UTC, datetime

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "src")]

from tests.support.speech import base_model, looped, story, tiny_en_model

#: The clip length of the pair, as in the report that started this (issue 24).
CLIP_SECONDS = 9.0


def child(model: Path, clip: Path, long: Path, at_once: int, threads: int) -> dict[str, float]:
    """One setting: the pair, then the long file, through the service's recognizer."""
    from transcriber_adapters.filesystem import FilesystemFileStore  # noqa: PLC0415
    from transcriber_adapters.whisper import (  # noqa: PLC0415
        WhisperRecognizer,
        WhisperSettings,
        load_model,
    )
    from transcriber_core.ports import Recognized  # noqa: PLC0415

    async def run() -> dict[str, float]:
        folder = Path(tempfile.mkdtemp(prefix="bench-whisper-cc-"))
        store = FilesystemFileStore(folder / "files", staging_dir=folder / "staging")
        now = datetime.now(UTC)
        clip_a = await store.put("a", ".ogg", clip, now=now)
        clip_b = await store.put("b", ".ogg", clip, now=now)
        long_record = await store.put("long", ".ogg", long, now=now)
        settings = WhisperSettings(model_dir=model, threads=threads)
        await asyncio.to_thread(load_model, settings, workers=at_once)
        recognizer = WhisperRecognizer(store, settings, max_concurrent=at_once)

        async def timed(record: object) -> float:
            began = time.monotonic()
            started = await recognizer.start(record, duration=None)  # type: ignore[arg-type]
            assert isinstance(started.outcome, Recognized), started.outcome
            return time.monotonic() - began

        began = time.monotonic()
        latencies = await asyncio.gather(timed(clip_a), timed(clip_b))
        pair = time.monotonic() - began
        long_seconds = await timed(long_record)
        return {"pair": pair, "slower_clip": max(latencies), "long": long_seconds}

    return asyncio.run(run())


def measure(model: Path, clip: Path, long: Path, at_once: int, threads: int) -> dict[str, float]:
    """One setting in a fresh child process."""
    command = [sys.executable, __file__, "--child", str(model), str(clip), str(long)]
    command += [str(at_once), str(threads)]
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    done = subprocess.run(command, stdout=subprocess.PIPE, env=env, check=True)
    figures: dict[str, float] = json.loads(done.stdout)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--long-seconds", type=float, default=120.0)
    parser.add_argument("--model", default="base", choices=["base", "tiny.en"])
    parser.add_argument("--settings", default="2x2,1x2,2x1", help="AT_ONCExTHREADS, ...")
    parser.add_argument("--child", nargs=5, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        model, clip, long, at_once, threads = args.child
        print(json.dumps(child(Path(model), Path(clip), Path(long), int(at_once), int(threads))))
        return
    settings = [tuple(int(n) for n in item.split("x")) for item in args.settings.split(",")]
    with tempfile.TemporaryDirectory(prefix="bench-whisper-cc-") as work:
        folder = Path(work)
        model = base_model(folder / "base") if args.model == "base" else tiny_en_model()
        speech = story(folder)
        clip = looped(speech, folder / "clip.ogg", CLIP_SECONDS)
        long = looped(speech, folder / "long.ogg", args.long_seconds)
        print(
            f"cpus={os.cpu_count()} model={args.model} clip_s={CLIP_SECONDS:g}"
            f" long_s={args.long_seconds:g} load_average={os.getloadavg()[0]:.2f}"
        )
        totals: dict[tuple[int, ...], list[dict[str, float]]] = {s: [] for s in settings}
        for round_number in range(1, args.rounds + 1):
            for setting in settings:
                at_once, threads = setting
                figures = measure(model, clip, long, at_once, threads)
                totals[setting].append(figures)
                print(
                    f"round={round_number} recognize={at_once} threads={threads}"
                    f" pair_s={figures['pair']:.2f} slower_clip_s={figures['slower_clip']:.2f}"
                    f" long_s={figures['long']:.2f} load_average={os.getloadavg()[0]:.2f}",
                    flush=True,
                )
        baseline = settings[0]
        print(f"mean over rounds, and ratio to recognize={baseline[0]} threads={baseline[1]}:")
        means = {
            setting: {key: sum(run[key] for run in runs) / len(runs) for key in runs[0]}
            for setting, runs in totals.items()
        }
        for setting, mean in means.items():
            ratios = " ".join(f"{key}_ratio={mean[key] / means[baseline][key]:.2f}" for key in mean)
            print(
                f"recognize={setting[0]} threads={setting[1]}"
                f" pair_s={mean['pair']:.2f} slower_clip_s={mean['slower_clip']:.2f}"
                f" long_s={mean['long']:.2f} {ratios}"
            )


if __name__ == "__main__":
    main()
