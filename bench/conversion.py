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
CPUs) and ``one alone / bare ffmpeg`` (goal ≤ 1.2). And what the CPUs
allow (ADR 63): the CPU seconds ffmpeg took per recording (the service's
reaped children), how many CPUs one alone kept busy, the best ratio that
leaves on this machine's CPUs (one alone's CPUs / the CPUs), and the
machine's idle CPU seconds while the four converted (0: someone else or we
used every CPU; a serialised service would leave CPUs idle).

Usage: .venv/bin/python -P bench/conversion.py [--minutes 20] [--convert N] [--rounds 1]
Run it with PYTHONPATH pointing at the sources to measure.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # for tests.support

import attrs  # noqa: E402 - after the path
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


@attrs.frozen
class Measure:
    """One figure: wall seconds, ffmpeg's CPU seconds, the machine's idle CPU seconds meanwhile."""

    wall: float
    cpu: float
    idle: float


def machine_idle() -> float:
    """Idle (and I/O wait) CPU seconds of the whole machine since boot, from /proc/stat."""
    fields = Path("/proc/stat").read_text().splitlines()[0].split()
    return (int(fields[4]) + int(fields[5])) / os.sysconf("SC_CLK_TCK")


def children_cpu(pid: int) -> float:
    """User and system CPU seconds of ``pid``'s reaped children (its ffmpegs), from /proc."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    fields = stat[stat.rindex(")") + 2 :].split()
    return (int(fields[13]) + int(fields[14])) / os.sysconf("SC_CLK_TCK")


def bare(source: Path, target: Path) -> Measure:
    """ffmpeg alone with the converter's own arguments (at the default priority)."""
    limit = DEFAULT_DECODE_LIMITS.allowed_seconds(source.stat().st_size)
    arguments = command(find_ffmpeg(), source, target, max_seconds=limit)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    idle = machine_idle()
    started = time.monotonic()
    subprocess.run(arguments, check=True, capture_output=True)
    wall = time.monotonic() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    return Measure(wall=wall, cpu=cpu, idle=machine_idle() - idle)


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


def through_service(root: Path, workers: dict[str, Any], data: bytes, count: int) -> Measure:
    """From the first upload's answer until ``count`` uploads are all converted."""
    config = {"workers": workers, "shutdown": {"grace_seconds": 0, "hard_seconds": 10}}
    with running_service(root, config=config) as service, service.client(timeout=120) as client:
        cpu = children_cpu(service.pid)
        job_ids = [upload(client, data, "recording.wav")]
        started = time.monotonic()
        idle = machine_idle()
        job_ids += [upload(client, data, "recording.wav") for _ in range(count - 1)]
        finished = wait_converted(service, job_ids)
        idle = machine_idle() - idle
        cpu = children_cpu(service.pid) - cpu
        states = {row[0] for row in service.query("SELECT state FROM jobs")}
        service.kill()
    if states - {"recognize", "check", "done"}:
        raise SystemExit(f"unexpected states after conversion: {states}")
    return Measure(wall=finished - started, cpu=cpu, idle=idle)


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
    cpus = len(os.sched_getaffinity(0))
    print(f"cpus: {cpus}, load: {os.getloadavg()[0]:.2f}")
    with tempfile.TemporaryDirectory(prefix="conversion-") as folder:
        base = Path(folder)
        source = recording(base / "recording.wav", arguments.minutes)
        data = source.read_bytes()
        for round_ in range(arguments.rounds):
            ffmpeg = bare(source, base / "bare.ogg")
            one = through_service(base / f"one-{round_}", workers, data, 1)
            four = through_service(base / f"four-{round_}", workers, data, 4)
            busy = one.cpu / one.wall
            print(
                f"{arguments.minutes}-minute WAV ({len(data) / 1e6:.1f} MB),"
                f" workers={workers or 'defaults'}: bare ffmpeg {ffmpeg.wall:.2f} s,"
                f" one alone {one.wall:.2f} s, four at once {four.wall:.2f} s;"
                f" four / (4 x one) = {four.wall / (4 * one.wall):.2f},"
                f" one / bare = {one.wall / ffmpeg.wall:.2f};"
                f" ffmpeg CPU s per recording: bare {ffmpeg.cpu:.2f}, one {one.cpu:.2f},"
                f" four {four.cpu / 4:.2f}; one alone kept {busy:.2f} CPUs busy, so the best"
                f" four / (4 x one) here is {busy / cpus:.2f}; machine idle while the four"
                f" converted {four.idle:.2f} CPU s; load now {os.getloadavg()[0]:.2f}"
            )


if __name__ == "__main__":
    main()
