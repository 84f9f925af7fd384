"""The duration bomb (reference: Limits): wall time to convert (or refuse) a 1 Hz WAV.

A 21,644-byte WAV of 8-bit PCM at 1 Hz declares, and decodes to, six hours
of audio. Before the converter had input limits ffmpeg resampled all six
hours to 48 kHz Opus; with them it refuses the file before decoding.
Prints the seconds ``FfmpegConverter.convert`` took and how it ended.

Usage: .venv/bin/python -P bench/converter_bomb.py [--seconds 21600] [--rounds 3]
Run it with PYTHONPATH pointing at the sources to measure (e.g. another checkout).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # for tests.support.media

from tests.support.media import one_hertz_wav  # noqa: E402 - needs ROOT on the path

from transcriber_adapters.ffmpeg import FfmpegConverter  # noqa: E402 - after tests.support


async def one_round(folder: Path, seconds: int) -> tuple[float, str]:
    """Convert the bomb once; the wall time and how it ended."""
    source = one_hertz_wav(folder / "bomb.wav", seconds)
    started = time.monotonic()
    try:
        duration = await FfmpegConverter().convert(source, folder / "out.ogg")
    except Exception as exc:  # noqa: BLE001 - the outcome is the figure
        outcome = f"{type(exc).__name__}: {exc}"
    else:
        outcome = f"converted, {duration:.0f} s of audio"
    return time.monotonic() - started, outcome


def main() -> None:
    """Parse the arguments, run the rounds, print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=int, default=21_600, help="declared audio length")
    parser.add_argument("--rounds", type=int, default=3)
    arguments = parser.parse_args()
    times = []
    with tempfile.TemporaryDirectory() as folder:
        for _ in range(arguments.rounds):
            elapsed, outcome = asyncio.run(one_round(Path(folder), arguments.seconds))
            times.append(elapsed)
            print(f"{elapsed:8.3f} s  {outcome}")
    size = arguments.seconds + 44
    print(
        f"bomb: {size} bytes, {arguments.seconds} s declared; "
        f"median {statistics.median(times):.3f} s over {len(times)} round(s)"
    )


if __name__ == "__main__":
    main()
