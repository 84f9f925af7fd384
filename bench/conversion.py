"""Conversion throughput (ADR 27): four 20-minute recordings at once, against one alone.

All in one script, on one file (20 minutes of 16 kHz mono 16-bit WAV,
38.4 MB: too big for the express lane):

* ``bare ffmpeg`` — ``transcriber_adapters.ffmpeg.command`` run directly, the
  same arguments the converter uses, on the same file;
* ``one alone`` — the real service (``python -m transcriber_app serve``),
  one upload, from the upload's answer to the job leaving ``convert``;
* ``four at once`` — the same service, four uploads sent back to back,
  from the first answer to the last job leaving ``convert``.

Prints each time, ``four at once / (4 x one alone)`` (goal ≤ 0.6 on two
CPUs) and ``one alone / bare ffmpeg`` (goal ≤ 1.2).

Usage: .venv/bin/python -P bench/conversion.py [--minutes 20] [--convert N] [--rounds 1]
Run it with PYTHONPATH pointing at the sources to measure.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # for tests.support

import httpx  # noqa: E402 - after the path
from tests.support.media import generate  # noqa: E402
from tests.support.service import Service, running_service  # noqa: E402

from transcriber_adapters.ffmpeg import command, find_ffmpeg  # noqa: E402
from transcriber_core.policy import DEFAULT_DECODE_LIMITS  # noqa: E402

DEADLINE = 900.0
POLL = 0.02


def recording(target: Path, minutes: int) -> Path:
    """A tone of ``minutes`` as 16 kHz mono 16-bit WAV."""
    source = f"sine=frequency=440:sample_rate=16000:duration={minutes * 60}"
    return generate(target, "-f", "lavfi", "-i", source, "-ac", "1", "-c:a", "pcm_s16le")


def bare(source: Path, target: Path) -> float:
    """Seconds for ffmpeg alone with the converter's own arguments."""
    limit = DEFAULT_DECODE_LIMITS.allowed_seconds(source.stat().st_size)
    arguments = command(find_ffmpeg(), source, target, max_seconds=limit)
    started = time.monotonic()
    subprocess.run(arguments, check=True, capture_output=True)
    return time.monotonic() - started


def upload(client: httpx.Client, data: bytes, name: str) -> str:
    """POST one recording; its job id."""
    response = client.post("/api/audio", files={"file": (name, data, "audio/wav")})
    response.raise_for_status()
    job_id: str = response.json()["job_id"]
    return job_id


def wait_converted(service: Service, job_ids: list[str]) -> float:
    """Poll the database until no job of ``job_ids`` is in ``convert``; the time then."""
    marks = ", ".join("?" * len(job_ids))
    sql = f"SELECT count(*) FROM jobs WHERE id IN ({marks}) AND state = 'convert'"
    deadline = time.monotonic() + DEADLINE
    while service.query(sql, tuple(job_ids))[0][0]:
        if time.monotonic() > deadline:
            raise SystemExit("conversions did not finish in time")
        time.sleep(POLL)
    return time.monotonic()


def through_service(root: Path, workers: dict[str, Any], data: bytes, count: int) -> float:
    """Seconds from the first upload's answer until ``count`` uploads are all converted."""
    config = {"workers": workers, "shutdown": {"grace_seconds": 0, "hard_seconds": 10}}
    with running_service(root, config=config) as service, service.client(timeout=120) as client:
        job_ids = [upload(client, data, "recording.wav")]
        started = time.monotonic()
        job_ids += [upload(client, data, "recording.wav") for _ in range(count - 1)]
        finished = wait_converted(service, job_ids)
        states = {row[0] for row in service.query("SELECT state FROM jobs")}
        service.kill()
    if states - {"recognize", "check", "done"}:
        raise SystemExit(f"unexpected states after conversion: {states}")
    return finished - started


def main() -> None:
    """Parse the arguments, measure, print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=int, default=20)
    parser.add_argument(
        "--convert", type=int, default=None, help="convert loops; default: embedded"
    )
    parser.add_argument("--rounds", type=int, default=1)
    arguments = parser.parse_args()
    workers: dict[str, Any] = {} if arguments.convert is None else {"convert": arguments.convert}
    print(f"cpus: {len(os.sched_getaffinity(0))}, load: {os.getloadavg()[0]:.2f}")
    with tempfile.TemporaryDirectory(prefix="conversion-") as folder:
        base = Path(folder)
        source = recording(base / "recording.wav", arguments.minutes)
        data = source.read_bytes()
        for round_ in range(arguments.rounds):
            ffmpeg = bare(source, base / "bare.ogg")
            one = through_service(base / f"one-{round_}", workers, data, 1)
            four = through_service(base / f"four-{round_}", workers, data, 4)
            print(
                f"{arguments.minutes}-minute WAV ({len(data) / 1e6:.1f} MB),"
                f" workers={workers or 'defaults'}: bare ffmpeg {ffmpeg:.2f} s,"
                f" one alone {one:.2f} s, four at once {four:.2f} s;"
                f" four / (4 x one) = {four / (4 * one):.2f},"
                f" one / bare = {one / ffmpeg:.2f}"
            )


if __name__ == "__main__":
    main()
