"""Where a waiting job stands, in /api/status and the panel's list (ADR 27)."""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator
from datetime import timedelta

import httpx
import pytest

from tests.support.admin import T0, in_process_client, log_in, make_owner
from transcriber_adapters.memory import ManualClock
from transcriber_app.bootstrap import Runtime
from transcriber_core.entities import Job, Origin, State


def _job(state: State, seconds: int, **fields: object) -> Job:
    created = T0 + timedelta(seconds=seconds)
    return Job(
        id=secrets.token_urlsafe(16),
        state=state,
        origin=Origin.http(),
        created=created,
        updated=created,
        **fields,  # type: ignore[arg-type]
    )


@pytest.fixture
async def client(runtime: Runtime) -> AsyncIterator[httpx.AsyncClient]:
    """An API client of the in-process app (no workers run, so nothing moves by itself)."""
    async with in_process_client(runtime) as api:
        yield api


async def _status(client: httpx.AsyncClient, job: Job) -> dict[str, object]:
    response = await client.get(f"/api/status/{job.id}")
    assert response.status_code == 200
    body: dict[str, object] = response.json()
    return body


async def test_status_shows_the_jobs_ahead_in_the_lane(
    runtime: Runtime, client: httpx.AsyncClient, clock: ManualClock
) -> None:
    """Long jobs count every waiting job ahead; a short one only the short ones ahead of it."""
    repo = runtime.services.repo
    first_long = _job(State.CONVERT, 1)
    second_long = _job(State.CONVERT, 2)
    clip = _job(State.CONVERT, 3, short=True)
    third_long = _job(State.CONVERT, 4)
    for job in (first_long, second_long, clip, third_long):
        clock.set(job.created)  # the store stamps queue order from its clock
        await repo.create(job)
    positions = [
        (await _status(client, job)).get("queue_position")
        for job in (first_long, second_long, clip, third_long)
    ]
    assert positions == [0, 1, 0, 3]


async def test_running_and_ended_jobs_have_no_position(
    runtime: Runtime, client: httpx.AsyncClient
) -> None:
    """A job under a live lease is running and an ended one waits for nothing: no position."""
    repo = runtime.services.repo
    running = _job(State.RECOGNIZE, 1, acquisition_id="worker", acquire_time=T0)
    done = _job(State.DONE, 2, text="hello")
    for job in (running, done):
        await repo.create(job)
    assert "queue_position" not in await _status(client, running)
    assert "queue_position" not in await _status(client, done)


async def test_the_panel_lists_each_jobs_lane(runtime: Runtime, clock: ManualClock) -> None:
    """The jobs list has a Lane column: short for the express lane, long for the others."""
    await make_owner(runtime)
    clip = _job(State.CONVERT, 2, short=True)
    recording = _job(State.CONVERT, 1)
    for job in (clip, recording):
        clock.set(job.created)
        await runtime.services.repo.create(job)
    async with in_process_client(runtime) as owner:
        assert (await log_in(owner)).status_code == 303
        page = (await owner.get("/admin/")).text
        detail = (await owner.get(f"/admin/jobs/{clip.id}")).text
    assert ">Lane</th>" in page
    lanes = [cell.split("</td>")[0] for cell in page.split('<td class="lane">')[1:]]
    assert lanes == ["short", "long"]
    assert "<dt>Lane</dt><dd>short (express)</dd>" in detail
