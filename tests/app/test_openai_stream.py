"""The /v1 stream of a recording split into parts: each part's text as it is recognised (ADR 46).

The pipeline runs step by step on the memory adapters, the queue's poll an
hour away, and the stream is read between the steps: a part's delta must
be out before the job ends, woken by the part's save.
"""

from __future__ import annotations

import asyncio
import json
from datetime import timedelta
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from tests.support.world import make_world
from transcriber_app.web import openai_api
from transcriber_core.entities import Origin, State
from transcriber_core.policy import DecodeLimits, Settings
from transcriber_core.ports import RecognizerLimits, Silence

PARTS = ("первая часть", "вторая часть", "третья часть")


async def test_each_part_is_streamed_when_it_is_recognised(tmp_path: Path) -> None:
    """Three parts finishing one check apart: three deltas, each before the next part, then done."""
    world = make_world(tmp_path, settings=Settings(idle_poll_interval=timedelta(hours=1)))
    world.converter.duration = 150.0
    world.converter.limits = DecodeLimits(min_bytes_per_second=0.01)
    world.converter.silences = (Silence(start=50, end=51), Silence(start=100, end=102))
    world.recognizer.limits = RecognizerLimits(max_seconds=60)
    for pending, text in enumerate(PARTS):
        world.recognizer.finish_next(text, pending_checks=pending)
    job = await world.submit(origin=Origin.http())
    runtime: Any = SimpleNamespace(services=world.services)
    events: list[dict[str, Any]] = []
    arrived = asyncio.Event()

    async def read() -> None:
        async for chunk in openai_api._events(runtime, job.id, within=3600):
            events.extend(
                json.loads(line.removeprefix("data: "))
                for line in chunk.decode().splitlines()
                if line.startswith("data: ")
            )
            arrived.set()

    reader = asyncio.create_task(read())
    seen_while_running: list[list[str]] = []
    for _ in range(80):
        if not await world.advance(job.id):
            break
        if (await world.repo.get(job.id)).state.is_terminal:
            continue
        done = sum(part.done for part in await world.repo.get_parts(job.id))
        # The part's save woke the stream (the poll is an hour away): it catches up at once.
        async with asyncio.timeout(5):
            while len(events) < done:
                arrived.clear()
                await arrived.wait()
        seen_while_running.append([e["delta"] for e in events])
    async with asyncio.timeout(5):
        await reader
    deltas = [e["delta"] for e in events if e["type"] == "transcript.text.delta"]
    assert deltas == ["первая часть", " вторая часть", " третья часть"]
    assert events[-1]["type"] == "transcript.text.done"
    assert events[-1]["text"] == " ".join(PARTS)
    # Each of the first two parts was out while the job still ran.
    assert ["первая часть"] in seen_while_running
    assert ["первая часть", " вторая часть"] in seen_while_running
    assert (await world.repo.get(job.id)).state is State.DONE
