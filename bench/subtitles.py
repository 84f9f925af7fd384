"""What rendering a transcript costs per request: cues, SRT, WebVTT and JSON (ADR 34).

The formats are computed from the job's words on every request, never
stored, so this is the price of one ``GET /api/jobs/{id}/transcript``
before the network. Makes a transcript of ``--hours`` of speech at
2.5 words a second (words timed by the memory recognizer: sentences of 12
words, pauses between them), then prints the best of ``--repeat`` runs of
each stage in seconds, and the number of cues and the output sizes.

Usage: .venv/bin/python -P bench/subtitles.py [--hours 4] [--repeat 3]
Run it with PYTHONPATH pointing at the sources to measure.
"""

from __future__ import annotations

import argparse
import json
import random
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import cattrs

from transcriber_adapters.memory.recognizer import _timed
from transcriber_core import subtitles
from transcriber_core.entities import Job, Origin, State

WORDS_PER_SECOND = 2.5
SENTENCE_WORDS = 12


def speech(hours: float) -> Job:
    """A done job with ``hours`` of timed words, as the memory recognizer times them."""
    rng = random.Random(34)
    count = int(hours * 3600 * WORDS_PER_SECOND)
    words = [
        "".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(1, 10)))
        + ("." if index % SENTENCE_WORDS == SENTENCE_WORDS - 1 else "")
        for index in range(count)
    ]
    text = " ".join(words)
    now = datetime.now(UTC)
    return Job(
        id="bench",
        state=State.DONE,
        origin=Origin.http(),
        text=text,
        words=_timed(text, hours * 3600),
        duration=hours * 3600,
        created=now,
        updated=now,
    )


def best(repeat: int, work: Callable[[], Any]) -> tuple[float, Any]:
    """The shortest of ``repeat`` runs of ``work`` in seconds, and its last result."""
    times, result = [], None
    for _ in range(repeat):
        started = time.perf_counter()
        result = work()
        times.append(time.perf_counter() - started)
    return min(times), result


def main() -> None:
    """Build the transcript, then time each stage of each format."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hours", type=float, default=4.0)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    job = speech(args.hours)
    print(f"words: {len(job.words):,} over {args.hours} h")
    seconds, cues = best(
        args.repeat, lambda: subtitles.cues(job.words, text=job.text or "", duration=job.duration)
    )
    print(f"cues: {len(cues):,} in {seconds:.3f} s")
    seconds, srt = best(args.repeat, lambda: subtitles.srt(cues))
    print(f"srt render: {seconds:.3f} s, {len(srt.encode()):,} bytes")
    seconds, vtt = best(args.repeat, lambda: subtitles.webvtt(cues))
    print(f"vtt render: {seconds:.3f} s, {len(vtt.encode()):,} bytes")
    seconds, body = best(
        args.repeat,
        lambda: json.dumps(cattrs.unstructure(subtitles.transcript(job)), ensure_ascii=False),
    )
    print(f"json (cues, unstructure, dumps): {seconds:.3f} s, {len(body.encode()):,} bytes")


if __name__ == "__main__":
    main()
