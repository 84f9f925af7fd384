"""Fairness (ADR 27): time-to-done of short clips sent while two 2-hour recordings convert.

Runs the real service (``python -m transcriber_app serve``, real ffmpeg,
memory recognizer) twice on fresh data dirs:

* ``baseline`` — one loop per step (``[workers] convert = recognize = check = 1``),
  what the service did before issue 9: the clips queue behind both recordings;
* ``lanes`` — the ``[workers]`` under test (default: the embedded defaults,
  on a 2-CPU machine two convert loops, one of them the express lane).

Each run uploads two 2-hour 8 kHz 8-bit WAVs, waits until the first one is
converting, then uploads the clips one after another, and polls every job's
status until every clip is ``done``. Prints each variant's p50, p95 and
max of upload-answered → done, and the long recordings' states at the end.

Usage: .venv/bin/python -P bench/fairness.py [--clips 20] [--variants baseline,lanes]
       [--convert N]   (lanes variant: convert loops; default: the embedded default)
Run it with PYTHONPATH pointing at the sources to measure.
"""

from __future__ import annotations

import argparse
import os
import statistics
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

#: Longest a run may take before it is declared stuck.
DEADLINE = 600.0
POLL = 0.02


def wav(target: Path, seconds: int) -> Path:
    """8 kHz mono unsigned 8-bit PCM: 8,000 bytes per second of a 440 Hz tone."""
    source = f"sine=frequency=440:sample_rate=8000:duration={seconds}"
    return generate(target, "-f", "lavfi", "-i", source, "-ac", "1", "-c:a", "pcm_u8")


def upload(client: httpx.Client, data: bytes, name: str) -> str:
    """POST one recording; its job id."""
    response = client.post("/api/audio", files={"file": (name, data, "audio/wav")})
    response.raise_for_status()
    job_id: str = response.json()["job_id"]
    return job_id


def converting(service: Service, job_id: str) -> bool:
    """True once the job is leased in the convert step."""
    rows = service.query(
        "SELECT 1 FROM jobs WHERE id = ? AND state = 'convert' AND acquisition_id IS NOT NULL",
        (job_id,),
    )
    return bool(rows)


def run(
    root: Path, workers: dict[str, Any], long_data: bytes, clip: bytes, clips: int
) -> dict[str, Any]:
    """One service, two long recordings, ``clips`` clips; each clip's seconds to done."""
    config = {"workers": workers, "shutdown": {"grace_seconds": 0, "hard_seconds": 10}}
    with running_service(root, config=config) as service, service.client(timeout=120) as client:
        long_ids = [upload(client, long_data, f"long-{n}.wav") for n in range(2)]
        deadline = time.monotonic() + DEADLINE
        while not converting(service, long_ids[0]):
            if time.monotonic() > deadline:
                raise SystemExit("the first long recording never started converting")
            time.sleep(POLL)
        sent: dict[str, float] = {}
        for n in range(clips):
            job_id = upload(client, clip, f"clip-{n}.wav")
            sent[job_id] = time.monotonic()
        finished: dict[str, float] = {}
        while len(finished) < clips:
            if time.monotonic() > deadline:
                raise SystemExit(f"only {len(finished)} of {clips} clips done in {DEADLINE} s")
            marks = ", ".join("?" * len(sent))
            done = service.query(
                f"SELECT id FROM jobs WHERE id IN ({marks}) AND state = 'done'", tuple(sent)
            )
            now = time.monotonic()
            for (job_id,) in done:
                finished.setdefault(job_id, now)
            time.sleep(POLL)
        states = [client.get(f"/api/status/{job_id}").json()["state"] for job_id in long_ids]
        service.kill()
    waits = sorted(finished[job_id] - sent[job_id] for job_id in sent)
    return {"waits": waits, "long_states": states}


def percentile(values: list[float], fraction: float) -> float:
    """The nearest-rank percentile of sorted ``values``."""
    rank = max(1, round(fraction * len(values) + 0.5 - 1e-9))
    return values[min(rank, len(values)) - 1]


def main() -> None:
    """Parse the arguments, run each variant, print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clips", type=int, default=20)
    parser.add_argument("--variants", default="baseline,lanes")
    parser.add_argument("--convert", type=int, default=None, help="lanes variant's convert loops")
    arguments = parser.parse_args()
    lanes: dict[str, Any] = {} if arguments.convert is None else {"convert": arguments.convert}
    variants = {"baseline": {"convert": 1, "recognize": 1, "check": 1}, "lanes": lanes}
    print(f"cpus: {len(os.sched_getaffinity(0))}, load: {os.getloadavg()[0]:.2f}")
    with tempfile.TemporaryDirectory(prefix="fairness-") as folder:
        media = Path(folder) / "media"
        media.mkdir()
        long_data = wav(media / "long.wav", 7200).read_bytes()
        clip = wav(media / "clip.wav", 5).read_bytes()
        for name in arguments.variants.split(","):
            started = time.monotonic()
            result = run(Path(folder) / name, variants[name], long_data, clip, arguments.clips)
            waits = result["waits"]
            print(
                f"{name:9s} workers={variants[name] or 'defaults'}: {len(waits)} clips,"
                f" p50 {statistics.median(waits):.2f} s, p95 {percentile(waits, 0.95):.2f} s,"
                f" max {waits[-1]:.2f} s; long recordings then: {result['long_states']};"
                f" run {time.monotonic() - started:.0f} s"
            )


if __name__ == "__main__":
    main()
