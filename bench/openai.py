"""The OpenAI-compatible /v1 against /api + polling, on the real service (ADR 46).

One ``transcriber serve`` (SQLite, memory recognizer, real ffmpeg) gets a
10-second clip again and again, alternating two clients:

- ``/api``: ``POST /api/audio``, then ``GET /api/status/{id}`` every
  ``--poll`` ms until done (a client that polls as fast as is polite);
- ``/v1``: one ``POST /v1/audio/transcriptions`` that waits for the job.

For each it prints p50 and p95 of the time to the transcript, and for /v1
the lag from the job's end (its ``ended`` stamp in the database, the
store's clock, here the same machine's wall clock) to the answer's
arrival: the goal is under 50 ms, which no poll of the database achieves.

Usage: .venv/bin/python bench/openai.py [--rounds 40] [--poll 100]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # for tests.support.service, the real-server harness

from tests.support.media import tone  # noqa: E402
from tests.support.service import Service, running_service  # noqa: E402


def _percentiles(values: list[float]) -> str:
    ordered = sorted(values)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return f"p50 {statistics.median(ordered) * 1000:7.1f} ms  p95 {p95 * 1000:7.1f} ms"


def _ended(service: Service, job_id: str) -> float:
    """The job's ``ended`` stamp as Unix seconds (SQLite keeps microseconds)."""
    ((ended,),) = service.query("SELECT ended FROM jobs WHERE id = ?", (job_id,))
    return float(ended) / 1_000_000


def via_api(client: httpx.Client, clip: bytes, poll: float) -> tuple[float, str]:
    """Upload and poll until done; seconds to the transcript, and the job id."""
    started = time.monotonic()
    job_id = client.post("/api/audio", files={"file": ("clip.wav", clip)}).json()["job_id"]
    while True:
        status = client.get(f"/api/status/{job_id}").json()
        if status["state"] == "done":
            return time.monotonic() - started, job_id
        time.sleep(poll)


def via_v1(client: httpx.Client, clip: bytes) -> tuple[float, float, str]:
    """One /v1 request; seconds to the transcript, its arrival (Unix seconds), the job id."""
    started = time.monotonic()
    response = client.post(
        "/v1/audio/transcriptions",
        files={"file": ("clip.wav", clip)},
        data={"model": "whisper-1"},
    )
    arrived = time.time()
    response.raise_for_status()
    return time.monotonic() - started, arrived, response.headers["transcriber-job-id"]


def main() -> None:
    """Alternate the two clients for ``--rounds`` rounds and print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=40)
    parser.add_argument("--poll", type=float, default=100.0, help="ms between status polls")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        clip = tone(Path(tmp) / "clip.wav", 10).read_bytes()
        api: list[float] = []
        v1: list[float] = []
        lags: list[float] = []
        with (
            running_service(Path(tmp) / "run") as service,
            httpx.Client(base_url=service.base_url, timeout=120) as client,
        ):
            via_v1(client, clip)  # warm up: the first conversion loads ffmpeg's caches
            for _ in range(args.rounds):
                seconds, _ = via_api(client, clip, args.poll / 1000)
                api.append(seconds)
                seconds, arrived, job_id = via_v1(client, clip)
                v1.append(seconds)
                lags.append(arrived - _ended(service, job_id))
    print(f"10 s clip, {args.rounds} rounds alternating, /api polled every {args.poll:g} ms")
    print(f"  /api + polling  time to transcript  {_percentiles(api)}")
    print(f"  /v1             time to transcript  {_percentiles(v1)}")
    print(f"  /v1 / (/api + polling), p50: {statistics.median(v1) / statistics.median(api):.2f}")
    print(f"  /v1 answer after the job's end      {_percentiles(lags)}")


if __name__ == "__main__":
    main()
