"""Pickup across processes (ADR 38): an upload to ``serve`` taken by a ``transcriber worker``.

Runs the real processes on fresh data dirs, memory recognizer, real ffmpeg:

* ``single`` — one ``serve`` with its own loops: the in-process wake-up;
* ``split`` — ``serve`` with every ``[workers]`` count at 0 plus one
  ``transcriber worker`` on the same SQLite data dir: the worker learns of a
  new job from its idle poll (``[queue] idle_poll_seconds``).

Uploads ``--clips`` one-second MP3s one after another, each waited for
until ``done``. Pickup is the time from ``serve``'s ``job.accepted`` log
line to the ``step.start state=convert`` line of the process that took it
(both stamped by this host's clock); done is upload answered → ``done``.
Prints p50, p95 and max of each.

Usage: .venv/bin/python -P bench/worker.py [--clips 30] [--poll 1.0] [--variants single,split]
Run it with PYTHONPATH pointing at the sources to measure.
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # for tests.support

from tests.support.media import tone  # noqa: E402
from tests.support.service import (  # noqa: E402
    WORKER_COMMAND,
    Service,
    running_service,
)

#: Loops of the process that runs steps (a small worker; serve's own in ``single``).
LOOPS = {"convert": 2, "recognize": 1, "check": 1}


@contextlib.contextmanager
def processes(root: Path, variant: str, poll: float) -> Iterator[tuple[Service, Service]]:
    """The process that takes uploads and the one that runs steps (the same for ``single``)."""
    queue = {"idle_poll_seconds": poll}
    data = root / "data"
    if variant == "single":
        config = {"workers": LOOPS, "queue": queue}
        with running_service(root / "serve", config=config, data_dir=data) as serve:
            yield serve, serve
        return
    api_config = {"workers": dict.fromkeys(LOOPS, 0), "queue": queue}
    with (
        running_service(root / "serve", config=api_config, data_dir=data) as serve,
        running_service(
            root / "worker",
            config={"workers": LOOPS, "queue": queue},
            data_dir=data,
            command=WORKER_COMMAND,
            listener="worker",
        ) as worker,
    ):
        yield serve, worker


def stamp(service: Service, *fragments: str) -> datetime:
    """The ``ts=`` of the first log line holding every fragment."""
    line = service.wait_for_log(*fragments)
    text = line.split(" ", 1)[0].removeprefix("ts=")
    return datetime.fromisoformat(text)


def run(variant: str, clips: int, poll: float, clip: bytes) -> dict[str, list[float]]:
    """Pickup and done times, in seconds, of ``clips`` uploads one after another."""
    pickups: list[float] = []
    dones: list[float] = []
    with tempfile.TemporaryDirectory() as folder, processes(Path(folder), variant, poll) as pair:
        serve, steps = pair
        with serve.client() as client:
            for index in range(clips):
                started = time.monotonic()
                answer = client.post("/api/audio", files={"file": (f"c{index}.mp3", clip)})
                answer.raise_for_status()
                job_id = answer.json()["job_id"]
                serve.wait_for_job(job_id, timeout=60)
                dones.append(time.monotonic() - started)
                accepted = stamp(serve, "job.accepted", f"job_id={job_id}")
                taken = stamp(steps, "step.start", f"job_id={job_id}", "state=convert")
                pickups.append((taken - accepted).total_seconds())
    return {"pickup": pickups, "done": dones}


def summary(values: list[float]) -> str:
    """p50, p95 and max in milliseconds."""
    ordered = sorted(values)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return (
        f"p50 {statistics.median(ordered) * 1000:7.1f} ms  "
        f"p95 {p95 * 1000:7.1f} ms  max {ordered[-1] * 1000:7.1f} ms"
    )


def main(argv: list[str] | None = None) -> int:
    """Run each variant and print its figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clips", type=int, default=30)
    parser.add_argument("--poll", type=float, default=1.0, help="[queue] idle_poll_seconds")
    parser.add_argument("--variants", default="single,split")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as folder:
        clip = tone(Path(folder) / "clip.mp3", 1).read_bytes()
    for variant in args.variants.split(","):
        for name, values in run(variant, args.clips, args.poll, clip).items():
            print(f"{variant:6} {name:6} n={len(values):3}  {summary(values)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
