"""A long conversion's CPU priority against voice notes' (ADR 63), with bare ffmpeg.

Two 20-minute WAVs (16 kHz mono 16-bit: long jobs) are converted in the
background by the converter's own ``command()``, at niceness 0 (before
ADR 63) or ``BACKGROUND_NICENESS`` (the service now); meanwhile 20
five-second clips are converted one after another at niceness 0, as the
express loop does. Prints the seconds the 20 clips took, the two
nicenesses in turn (0, 10, 0, 10, ...), so that the load of other
processes on a shared machine falls on both alike; quote the medians and
the pairwise ratio.

Usage: .venv/bin/python -P bench/background_priority.py [--rounds 5] [--clips 20]
Run it with PYTHONPATH pointing at the sources to measure.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # for tests.support

from tests.support.media import generate  # noqa: E402

from transcriber_adapters.ffmpeg import BACKGROUND_NICENESS, command, find_ffmpeg  # noqa: E402


def wav(target: Path, seconds: int, rate: int) -> Path:
    """A 440 Hz tone of ``seconds`` as mono 16-bit WAV at ``rate``."""
    source = f"sine=frequency=440:sample_rate={rate}:duration={seconds}"
    return generate(target, "-f", "lavfi", "-i", source, "-ac", "1", "-c:a", "pcm_s16le")


def clips_beside_long(
    folder: Path, long_wav: Path, clip: Path, *, niceness: int, clips: int
) -> float:
    """Seconds for ``clips`` clip conversions while two long ones run at ``niceness``."""
    binary = find_ffmpeg()
    nice = shutil.which("nice")
    if nice is None:
        raise SystemExit("nice is not on PATH")
    background = [
        subprocess.Popen(
            [nice, "-n", str(niceness), *command(binary, long_wav, folder / f"long-{n}.ogg")],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for n in range(2)
    ]
    try:
        started = time.monotonic()
        for _ in range(clips):
            subprocess.run(
                command(binary, clip, folder / "clip.ogg"), check=True, capture_output=True
            )
        took = time.monotonic() - started
        if any(process.poll() is not None for process in background):
            raise SystemExit("a long conversion ended before the clips: use a longer recording")
    finally:
        for process in background:
            process.kill()
            process.wait()
    return took


def main() -> None:
    """Parse the arguments, measure in turn, print each round and the medians."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--clips", type=int, default=20)
    arguments = parser.parse_args()
    print(f"cpus: {len(os.sched_getaffinity(0))}, load: {os.getloadavg()[0]:.2f}")
    nicenesses = (0, BACKGROUND_NICENESS)
    with tempfile.TemporaryDirectory(prefix="priority-") as name:
        folder = Path(name)
        long_wav = wav(folder / "long.wav", 1200, 16000)
        clip = wav(folder / "clip.wav", 5, 8000)
        times: dict[int, list[float]] = {niceness: [] for niceness in nicenesses}
        for round_ in range(arguments.rounds):
            for niceness in nicenesses:
                took = clips_beside_long(
                    folder, long_wav, clip, niceness=niceness, clips=arguments.clips
                )
                times[niceness].append(took)
                print(
                    f"round {round_ + 1}: {arguments.clips} clips beside two long conversions"
                    f" at niceness {niceness}: {took:.2f} s (load {os.getloadavg()[0]:.2f})"
                )
    ratios = [low / high for low, high in zip(times[BACKGROUND_NICENESS], times[0], strict=True)]
    print(
        f"median: niceness 0 {statistics.median(times[0]):.2f} s,"
        f" niceness {BACKGROUND_NICENESS} {statistics.median(times[BACKGROUND_NICENESS]):.2f} s;"
        f" pairwise ratio median {statistics.median(ratios):.2f}"
        f" (min {min(ratios):.2f}, max {max(ratios):.2f})"
    )


if __name__ == "__main__":
    main()
