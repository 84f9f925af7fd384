"""Webhook outbox latency: from a job's end (its fenced save) to the receiver's 2xx (ADR 35).

Jobs leased in ``check`` on a real SQLite file are saved ``done`` one by one
the way a worker does (``save_if_held`` writes the job and its delivery in
one transaction, then wakes the delivery loops); ``Workers`` delivery loops
send signed POSTs through ``AiohttpWebhookSender`` to an aiohttp receiver
running in a thread of its own on 127.0.0.1. Two shapes:

- paced: one job ends every ``--gap`` ms (a busy service);
- burst: every job ends at once (a backlog after a receiver outage).

Prints p50, p95 and max of end-to-delivery latency, and deliveries/s.

Usage: .venv/bin/python bench/webhooks.py [--jobs 1000] [--loops 2] [--gap 5]
"""

from __future__ import annotations

import sys
from pathlib import Path

# bench/queue.py would shadow the stdlib ``queue`` that sqlite's thread imports.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]

import argparse
import asyncio
import json
import statistics
import tempfile
import threading
import time
from datetime import timedelta

from aiohttp import web

from transcriber_adapters.memory import (
    MemoryConverter,
    MemoryFileStore,
    MemoryNotifier,
    MemoryRecognizer,
)
from transcriber_adapters.sqlite import SqliteJobRepository
from transcriber_adapters.system import RandomIds, SystemClock
from transcriber_adapters.webhooks import AiohttpWebhookSender
from transcriber_core.entities import Job, Origin, State
from transcriber_core.outbox import end_deliveries
from transcriber_core.services import Services
from transcriber_core.transitions import transition
from transcriber_core.wakeup import OUTBOX
from transcriber_core.worker import Workers

SECRET = "bench-secret"  # noqa: S105 - signs bench traffic to a local receiver


class Receiver:
    """An aiohttp receiver in its own thread and loop; notes when each job's call arrived."""

    def __init__(self) -> None:
        self.arrived: dict[str, float] = {}
        self.port = 0
        self._ready = threading.Event()
        self._stop: asyncio.Event | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread = threading.Thread(target=lambda: asyncio.run(self._serve()), daemon=True)

    def start(self) -> None:
        self._thread.start()
        self._ready.wait()

    def stop(self) -> None:
        if self._loop is not None and self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join()

    async def _serve(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()

        async def handle(request: web.Request) -> web.Response:
            job_id = json.loads(await request.read())["job_id"]
            self.arrived.setdefault(job_id, time.perf_counter())
            return web.Response(status=204)

        app = web.Application()
        app.router.add_post("/hook", handle)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        self.port = runner.addresses[0][1]
        self._ready.set()
        await self._stop.wait()
        await runner.cleanup()


async def _leased_jobs(repo: SqliteJobRepository, count: int, url: str) -> list[tuple[Job, str]]:
    clock = SystemClock()
    leased: list[tuple[Job, str]] = []
    for index in range(count):
        now = clock.now()
        job = Job(
            id=f"bench-{index:05d}-{RandomIds().new_id()}",
            state=State.CHECK,
            origin=Origin.http(),
            callback_url=url,
            created=now,
            updated=now,
        )
        await repo.create(job)
    for _ in range(count):
        acquisition_id = RandomIds().new_id()
        job_or_none = await repo.acquire(
            State.CHECK, acquisition_id=acquisition_id, lease=timedelta(hours=1)
        )
        assert job_or_none is not None
        leased.append((job_or_none, acquisition_id))
    return leased


async def run(jobs: int, loops: int, gap: float, *, burst: bool) -> None:
    receiver = Receiver()
    receiver.start()
    url = f"http://127.0.0.1:{receiver.port}/hook"
    with tempfile.TemporaryDirectory() as folder:
        clock = SystemClock()
        repo = await SqliteJobRepository.open(Path(folder) / "bench.db", clock=clock)
        sender = AiohttpWebhookSender(secret=SECRET, clock=clock, allow_private=True)
        services = Services(
            repo=repo,
            files=MemoryFileStore(),
            converter=MemoryConverter(),
            recognizer=MemoryRecognizer(),
            notifier=MemoryNotifier(),
            webhooks=sender,
            clock=clock,
            ids=RandomIds(),
        )
        leased = await _leased_jobs(repo, jobs, url)
        # One idle convert loop: a process with no step loop starts nothing (ADR 38).
        workers = Workers(services, {State.CONVERT: 1}, deliveries=loops)
        workers.start()
        ended: dict[str, float] = {}
        started = time.perf_counter()
        for job, acquisition_id in leased:
            done = transition(job, State.DONE, now=clock.now(), text="t")
            await repo.save_if_held(
                done, acquisition_id=acquisition_id, deliveries=end_deliveries(done)
            )
            ended[job.id] = time.perf_counter()
            services.wakeup.notify(OUTBOX)
            if not burst:
                await asyncio.sleep(gap / 1000)
        deadline = time.perf_counter() + 120
        # The receiver counts in another thread's loop: look, rather than share an event.
        while len(receiver.arrived) < jobs and time.perf_counter() < deadline:  # noqa: ASYNC110
            await asyncio.sleep(0.01)
        elapsed = time.perf_counter() - started
        await workers.drain(grace=1)
        await sender.close()
        await repo.close()
    receiver.stop()
    latencies = sorted(
        (receiver.arrived[j] - ended[j]) * 1000 for j in ended if j in receiver.arrived
    )
    shape = "burst" if burst else f"paced, one end every {gap:g} ms"
    quantiles = statistics.quantiles(latencies, n=100)
    print(
        f"{shape:<30} delivered {len(latencies)}/{jobs}  p50 {quantiles[49]:7.1f} ms"
        f"  p95 {quantiles[94]:7.1f} ms  max {latencies[-1]:7.1f} ms"
        f"  {len(latencies) / elapsed:6.0f} deliveries/s  ({loops} delivery loops)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=1000)
    parser.add_argument("--loops", type=int, default=2)
    parser.add_argument("--gap", type=float, default=5.0, help="ms between two job ends (paced)")
    options = parser.parse_args()
    asyncio.run(run(options.jobs, options.loops, options.gap, burst=False))
    asyncio.run(run(options.jobs, options.loops, options.gap, burst=True))


if __name__ == "__main__":
    main()
