"""Another person's page while one person sends eight corrections at once (SPEC §29, ADR 65).

In one process, as ``serve`` runs it: a runtime on a fresh data dir, the
owner, Alice and Bob signed in through the workspace's own pages (in-process
HTTP, one event loop). Alice has a done recording of ``--words`` words of
natural text; she posts ``--parallel`` corrections of it at once, all from
version 0 (one page sent eight times), each changing every tenth word.
Meanwhile Bob opens his list of recordings (``GET /w/``) one request after
another; his page's times before (idle) and while the corrections run are
printed (p50, p95, max), with how long the corrections took and what they
answered.

Run it on this code and on the code before ADR 65 by pointing PYTHONPATH at
the sources to measure (the test helpers are this checkout's):
  PYTHONPATH=src:. .venv/bin/python bench/corrections_load.py
  PYTHONPATH=/path/to/old/src:. .venv/bin/python bench/corrections_load.py
"""

from __future__ import annotations

import sys
from pathlib import Path

# bench/queue.py would shadow the stdlib ``queue``.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]

import argparse  # noqa: E402 - after the path
import asyncio  # noqa: E402
import random  # noqa: E402
import statistics  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from collections import Counter  # noqa: E402

import httpx  # noqa: E402
from tests.app.test_workspace import csrf, person  # noqa: E402
from tests.support.admin import OWNER_NAME, PASSWORD, in_process_client, make_owner  # noqa: E402

import transcriber_core  # noqa: E402
from transcriber_app.bootstrap import Runtime, build  # noqa: E402
from transcriber_app.config import Config, HttpConfig, StorageConfig  # noqa: E402
from transcriber_core.entities import Job, Origin, State, Word  # noqa: E402


def natural(n: int, rng: random.Random) -> list[str]:
    """``n`` short words drawn by a Zipf law from 3,000 made-up ones."""
    vocabulary = [f"w{i}" for i in range(3_000)]
    weights = [1 / (rank + 1) for rank in range(len(vocabulary))]
    return rng.choices(vocabulary, weights, k=n)


def quantiles(samples: list[float]) -> str:
    """p50, p95 and max of ``samples`` (seconds) in milliseconds."""
    ordered = sorted(samples)
    p95 = ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]
    return (
        f"p50 {statistics.median(ordered) * 1e3:.1f} ms, p95 {p95 * 1e3:.1f} ms, "
        f"max {ordered[-1] * 1e3:.1f} ms ({len(ordered)} pages)"
    )


async def owner_client(runtime: Runtime) -> httpx.AsyncClient:
    """The owner, signed in to the admin panel."""
    await make_owner(runtime)
    client = in_process_client(runtime)
    page = await client.get("/admin/login")
    await client.post(
        "/admin/login",
        data={"csrf": csrf(page.text), "name": OWNER_NAME, "password": PASSWORD, "next": "/admin/"},
    )
    return client


async def pages(bob: httpx.AsyncClient, stop: asyncio.Event) -> list[float]:
    """Bob's list, one request after another until ``stop``; each one's seconds."""
    times = []
    while not stop.is_set():
        began = time.perf_counter()
        answer = await bob.get("/w/")
        times.append(time.perf_counter() - began)
        assert answer.status_code == 200
        await asyncio.sleep(0.005)
    return times


async def run(words: int, parallel: int, idle_pages: int, pattern: str) -> None:
    """Set up, measure, print."""
    print(f"code under test: {Path(transcriber_core.__file__).parent.parent}")
    with tempfile.TemporaryDirectory() as data:
        config = Config(
            storage=StorageConfig(data_dir=Path(data)), http=HttpConfig(host="127.0.0.1")
        )
        runtime = await build(config)
        try:
            owner = await owner_client(runtime)
            alice = await person(runtime, owner, "alice")
            bob = await person(runtime, owner, "bob")
            (who,) = [p for p in await runtime.people.list_people() if p.name == "alice"]
            rng = random.Random(7)
            tokens = natural(words, rng) if pattern == "natural" else ["a"] * words
            now = runtime.services.clock.now()
            job = Job(
                id=runtime.services.ids.new_id(),
                state=State.DONE,
                origin=Origin.http(),
                text=" ".join(tokens),
                words=tuple(
                    Word(text=t, start=i * 0.4, end=i * 0.4 + 0.3) for i, t in enumerate(tokens)
                ),
                owner=who.owner_key,
                created=now,
                updated=now,
            )
            await runtime.services.repo.create(job)
            if pattern == "natural":
                typed = " ".join(
                    rng.choice(tokens) if i % 10 == 5 else t for i, t in enumerate(tokens)
                )
            else:
                typed = " ".join(["a", "b"] * (words // 2))
            print(f"{words:,} words, {len(typed):,} characters typed, {parallel} at once")
            idle = []
            for _ in range(idle_pages):
                began = time.perf_counter()
                await bob.get("/w/")
                idle.append(time.perf_counter() - began)
            print(f"Bob's page, idle:                  {quantiles(idle)}")
            token = csrf((await alice.get("/w/")).text)
            body = {"version": 0, "start": 0, "end": words, "text": typed}
            stop = asyncio.Event()
            watching = asyncio.create_task(pages(bob, stop))
            began = time.perf_counter()
            answers = await asyncio.gather(
                *(
                    alice.post(
                        f"/w/recordings/{job.id}/words",
                        json=body,
                        headers={"X-CSRF-Token": token},
                        timeout=None,
                    )
                    for _ in range(parallel)
                )
            )
            took = time.perf_counter() - began
            stop.set()
            busy = await watching
            print(f"Bob's page, while they ran:        {quantiles(busy)}")
            codes = Counter(a.status_code for a in answers)
            print(f"the {parallel} corrections: {took:.2f} s in all, answers {dict(codes)}")
        finally:
            await runtime.close()


def main() -> None:
    """Parse the options and run."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--words", type=int, default=3_000)
    parser.add_argument("--parallel", type=int, default=8)
    parser.add_argument("--idle-pages", type=int, default=50)
    parser.add_argument("--pattern", choices=["natural", "two-symbol"], default="natural")
    options = parser.parse_args()
    asyncio.run(run(options.words, options.parallel, options.idle_pages, options.pattern))


if __name__ == "__main__":
    main()
