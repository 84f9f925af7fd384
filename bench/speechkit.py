"""SpeechKit's two paths (ADR 29): time from upload to ``done`` for 10 s clips, sync vs async.

Runs the real service (``python -m transcriber_app serve``, real ffmpeg,
the yandex recognizer) against a local fake SpeechKit with realistic
latencies — sync: ``--sync-latency`` (1 s) per request; async: an operation
is done ``--operation-seconds`` (5 s: 10 s per audio minute, at least 5 s)
after it started — and moto for Object Storage. Two runs on fresh data
dirs, in the same invocation:

* ``sync`` — ``[yandex] sync_max_seconds = 30`` (the default): clips go to v1;
* ``async`` — ``sync_max_seconds = 0``: every clip is copied, started, polled.

Each run uploads ``--clips`` 10 s MP3 clips ``--gap`` seconds apart (0.5 s: a
busy bot's trickle; 0 is a burst that measures the queue, not the path), and polls
every job's status until all are ``done``. Prints p50, p95 and max of
upload-answered → done per run, and async p50 / sync p50.

Usage: .venv/bin/python -P bench/speechkit.py [--clips 20] [--gap 0.5] [--recognize N]
Run it with PYTHONPATH pointing at the sources to measure.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import logging
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
from moto.server import ThreadedMotoServer  # noqa: E402
from tests.support.fake_speechkit import API_KEY, FakeSpeechKit  # noqa: E402
from tests.support.media import tone  # noqa: E402
from tests.support.s3 import ACCESS_KEY_ID, REGION, SECRET_ACCESS_KEY, MotoS3  # noqa: E402
from tests.support.service import running_service  # noqa: E402

DEADLINE = 300.0
POLL = 0.02


def config(moto: MotoS3, bucket: str, fake: FakeSpeechKit, sync_max: float) -> dict[str, Any]:
    return {
        "recognizer": {"kind": "yandex"},
        "yandex": {
            "api_key": API_KEY,
            "stt_url": fake.stt_url,
            "operation_url": fake.operation_url,
            "v3_url": fake.v3_url,
            "sync_url": fake.sync_url,
            "sync_max_seconds": sync_max,
        },
        "s3": {
            "endpoint_url": moto.endpoint_url,
            "region": REGION,
            "bucket": bucket,
            "access_key_id": ACCESS_KEY_ID,
            "secret_access_key": SECRET_ACCESS_KEY,
            "path_style": True,
        },
    }


async def run(  # noqa: PLR0917 - a benchmark's own helper
    name: str, moto: MotoS3, clip: bytes, clips: int, args: argparse.Namespace, folder: Path
) -> list[float]:
    """Upload the clips one after another; seconds from each upload's answer to its ``done``."""
    async with FakeSpeechKit(
        storage_url=moto.endpoint_url,
        sync_seconds=args.sync_latency,
        operation_seconds=args.operation_seconds,
    ) as fake:
        sync_max = 30.0 if name == "sync" else 0.0
        settings = config(moto, moto.new_bucket(), fake, sync_max)
        if args.recognize:
            settings["workers"] = {"recognize": args.recognize}
        env = {"AWS_EC2_METADATA_DISABLED": "true"}
        with running_service(folder / name, config=settings, env=env) as service:
            async with httpx.AsyncClient(base_url=service.base_url, timeout=30) as client:
                answered: dict[str, float] = {}
                done: dict[str, float] = {}

                async def send() -> None:
                    for n in range(clips):
                        files = {"file": (f"clip-{n}.mp3", clip, "audio/mpeg")}
                        response = await client.post("/api/audio", files=files)
                        response.raise_for_status()
                        answered[response.json()["job_id"]] = time.monotonic()
                        await asyncio.sleep(args.gap)

                async def watch() -> None:
                    # Polls while uploads go on, so a clip's done is seen when it happens.
                    while len(done) < clips:
                        for job_id in list(answered.keys() - done.keys()):
                            body = (await client.get(f"/api/status/{job_id}")).json()
                            if body["state"] == "done":
                                done[job_id] = time.monotonic()
                            elif body["state"] in ("failed", "dead"):
                                raise RuntimeError(f"{name}: a job ended {body['state']}")
                        await asyncio.sleep(POLL)

                async with asyncio.timeout(DEADLINE):
                    await asyncio.gather(send(), watch())
        used = collections.Counter(r.path.rsplit("/", 1)[0] for r in fake.requests)
        print(f"{name}: requests by endpoint {dict(used)}")
    return [done[job] - answered[job] for job in answered]


def report(name: str, seconds: list[float]) -> float:
    ordered = sorted(seconds)
    p50 = statistics.median(ordered)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    print(f"{name:6} n={len(ordered)} p50={p50:.2f}s p95={p95:.2f}s max={ordered[-1]:.2f}s")
    return p50


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clips", type=int, default=20)
    parser.add_argument("--sync-latency", type=float, default=1.0)
    parser.add_argument("--operation-seconds", type=float, default=5.0)
    parser.add_argument("--recognize", type=int, default=0, help="[workers] recognize (0: default)")
    parser.add_argument("--gap", type=float, default=0.5, help="seconds between uploads")
    args = parser.parse_args()
    os.environ["AWS_EC2_METADATA_DISABLED"] = "true"
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    moto = MotoS3(endpoint_url=f"http://{host}:{port}")
    try:
        with tempfile.TemporaryDirectory() as temp:
            folder = Path(temp)
            clip = tone(folder / "clip.mp3", 10).read_bytes()
            print(
                f"{args.clips} clips of 10 s, {args.gap} s apart; fake latencies:"
                f" sync {args.sync_latency} s, async operation {args.operation_seconds} s"
            )
            results = {}
            for name in ("sync", "async"):
                results[name] = report(name, await run(name, moto, clip, args.clips, args, folder))
            print(f"async p50 / sync p50 = {results['async'] / results['sync']:.1f}x")
    finally:
        server.stop()


if __name__ == "__main__":
    asyncio.run(main())
