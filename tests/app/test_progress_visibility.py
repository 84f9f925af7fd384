"""Recognition progress as ``/api/status`` and the admin job page show it (ADR 51)."""

from __future__ import annotations

import secrets
from datetime import timedelta

import httpx

from tests.support.admin import T0, in_process_client, log_in, make_owner
from tests.support.openapi import Conformance
from transcriber_adapters.memory import ManualClock
from transcriber_app.bootstrap import Runtime
from transcriber_app.web.api import api_document
from transcriber_core.entities import Job, Origin, State


async def recognising(runtime: Runtime, clock: ManualClock) -> Job:
    """A 20-minute job whose worker noted 300 s done 60 s after it began."""
    repo = runtime.services.repo
    job = Job(
        id=secrets.token_urlsafe(16),
        state=State.RECOGNIZE,
        origin=Origin.http(),
        duration=1200.0,
        created=T0,
        updated=T0,
    )
    await repo.create(job)
    leased = await repo.acquire(State.RECOGNIZE, acquisition_id="lease-p", lease=timedelta(0))
    assert leased is not None
    await repo.save_progress_if_held(job.id, 0.0, acquisition_id="lease-p", begun=timedelta(0))
    clock.advance(timedelta(seconds=60))
    await repo.save_progress_if_held(job.id, 300.0, acquisition_id="lease-p")
    return job


async def test_status_shows_percent_seconds_and_estimate(
    runtime: Runtime, clock: ManualClock
) -> None:
    """A quarter done in a minute: 25 %, 300 of 1200 s, 180 s left as of the note; as documented."""
    job = await recognising(runtime, clock)
    conformance = Conformance(api_document(tokens=False))
    async with in_process_client(runtime) as client:
        response = await client.get(f"/api/status/{job.id}")
    conformance(response)
    assert response.status_code == 200
    assert response.json()["progress"] == {
        "percent": 25,
        "seconds_done": 300.0,
        "seconds_total": 1200.0,
        "eta_seconds": 180.0,
        "updated": (T0 + timedelta(seconds=60)).isoformat(),
    }


async def test_status_of_a_job_not_recognising_has_no_progress(runtime: Runtime) -> None:
    """A queued or ended job shows no progress field at all."""
    repo = runtime.services.repo
    queued = Job(
        id=secrets.token_urlsafe(16),
        state=State.CONVERT,
        origin=Origin.http(),
        created=T0,
        updated=T0,
    )
    await repo.create(queued)
    async with in_process_client(runtime) as client:
        body = (await client.get(f"/api/status/{queued.id}")).json()
    assert "progress" not in body


async def test_early_progress_has_no_estimate(runtime: Runtime, clock: ManualClock) -> None:
    """Below 5 % of the audio the answer has the percent but no ``eta_seconds``."""
    repo = runtime.services.repo
    job = await recognising(runtime, clock)
    await repo.save_progress_if_held(job.id, 30.0, acquisition_id="lease-p")
    async with in_process_client(runtime) as client:
        progress = (await client.get(f"/api/status/{job.id}")).json()["progress"]
    assert progress["percent"] == 2
    assert "eta_seconds" not in progress


async def test_admin_job_page_shows_the_progress(runtime: Runtime, clock: ManualClock) -> None:
    """The job page has a progress bar with the percent, the seconds and the time left."""
    job = await recognising(runtime, clock)
    await make_owner(runtime)
    client: httpx.AsyncClient
    async with in_process_client(runtime) as client:
        assert (await log_in(client)).status_code == 303
        page = await client.get(f"/admin/jobs/{job.id}")
    assert page.status_code == 200
    cell = page.text.split('id="job-progress">')[1].split("</dd>")[0]
    assert '<progress max="100" value="25"' in cell
    assert "25 % (5:00 of 20:00)" in cell
    assert "about 3:00 left" in cell
