"""A split job's parts, as the status route and the admin job page show them (ADR 26)."""

from __future__ import annotations

import secrets
from datetime import timedelta

import attrs
import httpx

from tests.support.admin import PASSWORD, T0, in_process_client, log_in
from transcriber_adapters.memory import ManualClock
from transcriber_app.bootstrap import Runtime
from transcriber_app.web.auth import hash_password
from transcriber_core.entities import Job, JobPart, Origin, State
from transcriber_core.naming import held_by


def new_job(state: State) -> Job:
    """A job from HTTP in ``state``, created at T0."""
    return Job(
        id=secrets.token_urlsafe(16), state=state, origin=Origin.http(), created=T0, updated=T0
    )


async def split_job(runtime: Runtime) -> Job:
    """A job in check with three parts: one done, one running, one not started."""
    repo = runtime.services.repo
    job = new_job(State.CHECK)
    await repo.create(job)
    leased = await repo.acquire(State.CHECK, acquisition_id="lease-v", lease=timedelta(0))
    assert leased is not None
    parts = [
        JobPart(job_id=job.id, index=0, start=0, end=3501, operation_id="op-first", text="a"),
        JobPart(job_id=job.id, index=1, start=3501, end=7001, operation_id="op-second"),
        JobPart(job_id=job.id, index=2, start=7001, end=9000),
    ]
    await repo.save_parts_if_held(job.id, parts, acquisition_id="lease-v")
    return job


async def test_status_counts_the_parts_of_a_split_job(runtime: Runtime) -> None:
    """``/api/status`` says how many parts are done of how many, for a split job only."""
    job = await split_job(runtime)
    whole = new_job(State.CHECK)
    await runtime.services.repo.create(whole)
    async with in_process_client(runtime) as client:
        split_body = (await client.get(f"/api/status/{job.id}")).json()
        whole_body = (await client.get(f"/api/status/{whole.id}")).json()
    assert split_body["parts_done"] == 1
    assert split_body["parts_total"] == 3
    assert "parts_total" not in whole_body
    assert "parts_done" not in whole_body


async def test_admin_job_page_lists_the_parts(runtime: Runtime) -> None:
    """The job page has one row per part: number, range, state and operation id."""
    job = await split_job(runtime)
    await runtime.owners.create_owner(await hash_password(PASSWORD), now=T0)
    async with in_process_client(runtime) as client:
        assert (await log_in(client)).status_code == 303
        page = await client.get(f"/admin/jobs/{job.id}")
    assert page.status_code == 200
    rows = page.text.split('<tr class="part">')[1:]
    assert len(rows) == 3
    assert "0.0 to 3501.0 s" in rows[0]
    assert ">done<" in rows[0]
    assert "op-first" in rows[0]
    assert ">recognising<" in rows[1]
    assert "op-second" in rows[1]
    assert ">not started<" in rows[2]
    assert "7001.0 to 9000.0 s" in rows[2]


async def test_job_page_of_a_whole_job_has_no_parts(runtime: Runtime) -> None:
    """A job recognised whole shows no parts section."""
    job = new_job(State.DONE)
    await runtime.services.repo.create(job)
    await runtime.owners.create_owner(await hash_password(PASSWORD), now=T0)
    client: httpx.AsyncClient
    async with in_process_client(runtime) as client:
        assert (await log_in(client)).status_code == 303
        page = await client.get(f"/admin/jobs/{job.id}")
    assert page.status_code == 200
    assert 'id="job-parts"' not in page.text


async def test_admin_job_page_names_the_worker_holding_a_part(
    runtime: Runtime, clock: ManualClock
) -> None:
    """A held part shows its worker, attempts and lease end; a part finished since shows none."""
    job = await split_job(runtime)
    repo = runtime.services.repo
    lease = runtime.services.settings.lease
    held = await repo.acquire_part(acquisition_id=held_by("worker-b:4242", "p1"), lease=lease)
    assert held is not None
    assert held.index == 1
    finished = await repo.acquire_part(acquisition_id=held_by("worker-c:77", "p2"), lease=lease)
    assert finished is not None
    assert finished.index == 2
    done = attrs.evolve(finished, text="c", operation_id="op-third", acquisition_id=None)
    await repo.save_part_if_held(done, acquisition_id=held_by("worker-c:77", "p2"))
    await runtime.owners.create_owner(await hash_password(PASSWORD), now=T0)
    async with in_process_client(runtime) as client:
        assert (await log_in(client)).status_code == 303
        page = await client.get(f"/admin/jobs/{job.id}")
    assert page.status_code == 200
    rows = page.text.split('<tr class="part">')[1:]
    assert len(rows) == 3
    assert "worker-b:4242" in rows[1]
    assert '<td class="num part-attempts" data-label="Attempts">1</td>' in rows[1]
    assert '<td class="time part-lease" data-label="Lease lapses">—</td>' not in rows[1]
    for finished_row in (rows[0], rows[2]):
        assert '<td class="part-holder" data-label="Holder">—</td>' in finished_row
        assert '<td class="time part-lease" data-label="Lease lapses">—</td>' in finished_row
    assert "worker-c" not in page.text
    # The lease lapses unrenewed: the page no longer names a holder for part 2.
    clock.advance(lease * 2)
    async with in_process_client(runtime) as client:
        assert (await log_in(client)).status_code == 303
        later = await client.get(f"/admin/jobs/{job.id}")
    assert "worker-b:4242" not in later.text
