"""What splitting a long recording costs on top of its conversion (ADR 26).

Makes a tone with a 2 s pause every 500 s (8 kHz mono), converts it once
with ``FfmpegConverter``, then plans and cuts it as the recognize step does
for a recognizer limited to ``--limit`` seconds, and prints the seconds
each stage took: the conversion, each window's silence search, each cut
(stream copy plus the measuring pass), and, for comparison, one
``silencedetect`` pass over the whole recording.

Usage: .venv/bin/python -P bench/splitting.py [--seconds 9000] [--limit 3600]
Run it with PYTHONPATH pointing at the sources to measure.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # for tests.support.media

from tests.support.media import generate  # noqa: E402 - needs ROOT on the path

from transcriber_adapters.ffmpeg import FfmpegConverter  # noqa: E402 - after tests.support
from transcriber_core.ports import RecognizerLimits  # noqa: E402
from transcriber_core.splitting import (  # noqa: E402
    Cut,
    choose_cut,
    part_length,
    plan_ranges,
    search_window,
)


async def run(seconds: int, limit: float) -> None:
    """Convert, plan and cut once, printing the time of each stage."""
    converter = FfmpegConverter()
    with tempfile.TemporaryDirectory() as folder:
        source = generate(
            Path(folder) / "long.wav",
            *("-f", "lavfi", "-i"),
            f"aevalsrc=sin(2*PI*440*t)*gte(mod(t\\,500)\\,2):s=8000:d={seconds}",
            *("-c:a", "pcm_u8"),
        )
        audio = Path(folder) / "converted.ogg"
        started = time.monotonic()
        duration = await converter.convert(source, audio)
        print(f"convert {duration:.0f} s of audio: {time.monotonic() - started:.1f} s")
        longest = part_length(
            RecognizerLimits(max_seconds=limit), seconds=duration, size=audio.stat().st_size
        )
        if longest is None:
            print("fits the limit: nothing to split")
            return
        cuts: list[Cut] = []
        start = 0.0
        while (window := search_window(start, seconds=duration, longest=longest)) is not None:
            began = time.monotonic()
            silences = await converter.find_silences(audio, start=window.start, end=window.end)
            cuts.append(cut := choose_cut(window, silences))
            start = cut.next_start
            spent = time.monotonic() - began
            print(
                f"silences in {window.start:.0f}-{window.end:.0f} s:"
                f" {spent:.2f} s, cut at {cut.at:.1f}"
            )
        for index, (begin, end) in enumerate(plan_ranges(duration, cuts)):
            began = time.monotonic()
            length = await converter.cut(
                audio, Path(folder) / f"part-{index}.ogg", start=begin, end=end
            )
            print(f"cut part {index} ({length:.1f} s): {time.monotonic() - began:.2f} s")
        began = time.monotonic()
        await converter.find_silences(audio, start=0, end=duration)
        print(
            f"for comparison, silences over the whole recording: {time.monotonic() - began:.1f} s"
        )


def main() -> None:
    """Parse the arguments and run once."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=int, default=9000)
    parser.add_argument("--limit", type=float, default=3600.0)
    arguments = parser.parse_args()
    asyncio.run(run(arguments.seconds, arguments.limit))


if __name__ == "__main__":
    main()
