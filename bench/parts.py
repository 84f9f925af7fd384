"""One long recording on 1 and on 2 worker processes: parts in parallel (SPEC §22, ADR 52).

Prints the wall time of one upload from the answer to ``done`` with one
``transcriber worker``, then with two, and the ratio; the figures in
docs/benchmarks.md come from here.

The processes are real: one ``serve`` with every ``[workers]`` count at 0
takes the upload, and the workers share its SQLite data dir (ADR 38), each
with one loop per step (so no express lane: its one recognize loop takes
parts) and ``[whisper] threads = 1``, one CPU thread per worker. The speech
is espeak-ng's voice telling ``tests/support/speech.STORY`` over and over,
as Ogg/Opus; Whisper base is joined from its two packages (the dev extra),
or ``--model tiny.en`` takes the test extra's. The wall time includes the
convert step, done by one worker in both runs; ``parts`` is how many parts
the recording was cut into, and each run's text is checked to be there.

``--simulate SECONDS`` swaps Whisper for the memory recognizer working that
long on each part (``[memory] work_seconds``, ``max_seconds`` the part
length): hosts that cost no CPU here, so ``--workers 1,10`` shows the
issue's simulated 10-host run (goal: wall ≈ the 1-worker time / 10 + one part).

Usage: .venv/bin/python -P bench/parts.py [--minutes 20] [--model base] [--part-seconds 600]
       [--workers 1,2] [--simulate 3]
Run it with PYTHONPATH pointing at the sources to measure.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import platform
import sqlite3
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # for tests.support

from tests.support.service import WORKER_COMMAND, Service, running_service  # noqa: E402
from tests.support.speech import base_model, story_repeated, tiny_en_model  # noqa: E402

#: One loop per step: the one recognize loop is not an express lane, so it takes parts.
LOOPS = {"convert": 1, "recognize": 1, "check": 1}
#: No hub: the model comes from a package on disk.
OFFLINE = {"HF_HUB_OFFLINE": "1"}


def whisper_config(model: Path, part_seconds: float) -> dict[str, Any]:
    """Whisper on one CPU thread, parts of ``part_seconds``."""
    return {
        "recognizer": {"kind": "whisper"},
        "whisper": {"model": str(model), "threads": 1, "part_seconds": part_seconds},
    }


@contextlib.contextmanager
def cluster(
    root: Path, shared: dict[str, Any], workers: int
) -> Iterator[tuple[Service, list[Service]]]:
    """``serve`` taking uploads and ``workers`` worker processes on its data dir."""
    data = root / "data"
    api = {**shared, "workers": dict.fromkeys(LOOPS, 0)}
    with contextlib.ExitStack() as stack:
        serve = stack.enter_context(
            running_service(root / "serve", config=api, data_dir=data, env=OFFLINE)
        )
        started = [
            stack.enter_context(
                running_service(
                    root / f"worker-{index}",
                    config={**shared, "workers": LOOPS},
                    data_dir=data,
                    env=OFFLINE,
                    command=WORKER_COMMAND,
                    listener="worker",
                    ready_timeout=120,
                )
            )
            for index in range(workers)
        ]
        yield serve, started


def run(workers: int, speech: Path, shared: dict[str, Any]) -> tuple[float, int, int, list[int]]:
    """Wall seconds from the upload's answer to ``done``, parts, words, parts done per worker."""
    with (
        tempfile.TemporaryDirectory() as folder,
        cluster(Path(folder), shared, workers) as (serve, started_workers),
    ):
        with serve.client(timeout=120) as client:
            answer = client.post(
                "/api/audio", files={"file": ("talk.ogg", speech.read_bytes(), "audio/ogg")}
            )
            answer.raise_for_status()
            started = time.monotonic()
            job_id = answer.json()["job_id"]
        status = serve.wait_for_job(job_id, timeout=6 * 3600)
        wall = time.monotonic() - started
        if status["state"] != "done":
            raise SystemExit(f"the job ended {status['state']}: {status.get('error')}")
        database = Path(folder) / "data" / "transcriber.db"
        with contextlib.closing(sqlite3.connect(f"file:{database}?mode=ro", uri=True)) as conn:
            [(parts,)] = conn.execute(
                "SELECT count(*) FROM job_parts WHERE job_id = ?", (job_id,)
            ).fetchall()
        per_worker = [
            sum(
                "event=part.done" in line and f"job_id={job_id}" in line
                for line in worker.log_lines()
            )
            for worker in started_workers
        ]
    return wall, parts, len(status["text"].split()), per_worker


def main(argv: list[str] | None = None) -> int:
    """Run each worker count once and print its wall time and the ratio to the first."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=20.0)
    parser.add_argument("--model", default="base", choices=("base", "tiny.en"))
    parser.add_argument("--part-seconds", type=float, default=600.0)
    parser.add_argument("--workers", default="1,2")
    parser.add_argument("--simulate", type=float, default=0.0, help="memory work_seconds")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as folder:
        speech = story_repeated(args.minutes * 60)
        if args.simulate:
            shared: dict[str, Any] = {
                "recognizer": {"kind": "memory"},
                "memory": {"max_seconds": args.part_seconds, "work_seconds": args.simulate},
            }
            engine = f"memory recognizer, {args.simulate:g} s a part"
        else:
            folder_path = Path(folder) / "base"
            model = tiny_en_model() if args.model == "tiny.en" else base_model(folder_path)
            shared = whisper_config(model, args.part_seconds)
            engine = f"Whisper {args.model}, 1 thread a worker"
        print(
            f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs,"
            f" Python {platform.python_version()}; {args.minutes:g} min of speech,"
            f" part_seconds {args.part_seconds:g}, {engine}"
        )
        first: float | None = None
        for workers in (int(n) for n in args.workers.split(",")):
            before = os.getloadavg()[0]
            wall, parts, words, per_worker = run(workers, speech, shared)
            first = first or wall
            print(
                f"workers {workers}: wall {wall:7.1f} s  parts {parts} (by worker {per_worker})"
                f"  words {words}  speed-up {first / wall:4.2f}x"
                f"  load {before:.1f} -> {os.getloadavg()[0]:.1f}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
