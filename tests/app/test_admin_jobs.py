"""The panel's job pages and downloads in-process, where a test can step between two calls."""

from __future__ import annotations

import logging
import re
import secrets
from collections.abc import AsyncIterator
from pathlib import Path

import attrs
import httpx
import pytest

from tests.support.admin import T0, csrf_of, in_process_client, log_in, make_owner
from tests.support.delegate import Delegate
from transcriber_app.bootstrap import Runtime
from transcriber_app.logs import KeyValueFormatter
from transcriber_core.copies import STORAGE_COPY
from transcriber_core.entities import FileRecord, Job, Origin, State
from transcriber_core.errors import StorageUnavailable
from transcriber_core.naming import derived_file_id
from transcriber_core.transitions import transition

_FLASH = re.compile(r"The job changed while you were changing it; nothing was changed\.")


def _job(state: State, **fields: object) -> Job:
    return Job(
        id=secrets.token_urlsafe(16),
        state=state,
        origin=Origin.http(),
        created=T0,
        updated=T0,
        **fields,  # type: ignore[arg-type]
    )


async def _owner(runtime: Runtime) -> AsyncIterator[httpx.AsyncClient]:
    await make_owner(runtime)
    async with in_process_client(runtime) as client:
        assert (await log_in(client)).status_code == 303
        yield client


@pytest.fixture
async def owner(runtime: Runtime) -> AsyncIterator[httpx.AsyncClient]:
    """A logged-in owner's client of the panel over ``runtime``."""
    async for client in _owner(runtime):
        yield client


class WorkerSavesAfterTheRead(Delegate):
    """The real repository, but a worker saves its result just after the panel reads the job."""

    def __init__(self, inner: object, job_id: str, result: Job, acquisition_id: str) -> None:
        super().__init__(inner)
        self.job_id, self.result, self.acquisition_id = job_id, result, acquisition_id
        #: Set by the test when the next read of the job is the one to race.
        self.armed = False
        self.raced = False

    async def get(self, job_id: str, *, owned_by: str | None = None) -> Job:
        job: Job = await self.inner.get(job_id, owned_by=owned_by)
        if job_id == self.job_id and self.armed:
            self.armed = False
            await self.inner.save_if_held(self.result, acquisition_id=self.acquisition_id)
            self.raced = True
        return job


async def test_a_worker_result_saved_during_a_state_change_is_kept(runtime: Runtime) -> None:
    """A worker's save between the panel's read and its save wins; the owner is told to reload."""
    repo = runtime.services.repo
    job = _job(State.RECOGNIZE, acquisition_id="worker-1", acquire_time=T0, attempts=1)
    await repo.create(job)
    result = transition(job, State.CHECK, now=T0, operation_id="paid-operation")
    racing = WorkerSavesAfterTheRead(repo, job.id, result, "worker-1")
    raced = attrs.evolve(runtime, services=attrs.evolve(runtime.services, repo=racing))
    async for client in _owner(raced):
        page = await client.get(f"/admin/jobs/{job.id}")
        racing.armed = True
        answer = await client.post(
            f"/admin/jobs/{job.id}/state",
            data={"csrf": csrf_of(page.text), "state": "failed", "from_state": "recognize"},
        )
        assert answer.status_code == 303
        reloaded = await client.get(answer.headers["location"])
        assert _FLASH.search(reloaded.text)
    assert racing.raced
    stored = await repo.get(job.id)
    assert (stored.state, stored.operation_id) == (State.CHECK, "paid-operation")


async def _page_of_job_without_its_copy(
    runtime: Runtime, owner: httpx.AsyncClient, state: State, **fields: object
) -> str:
    """The page of a job in ``state`` whose Object Storage copy has no record."""
    job = _job(state, **fields)
    job = attrs.evolve(job, storage_file_id=derived_file_id(job.id, STORAGE_COPY))
    await runtime.services.repo.create(job)
    page = await owner.get(f"/admin/jobs/{job.id}")
    assert page.status_code == 200
    return page.text


async def test_ended_jobs_removed_storage_copy_is_not_shown_as_a_problem(
    runtime: Runtime, owner: httpx.AsyncClient
) -> None:
    """A finished job's deleted Object Storage copy reads "removed after the job ended"."""
    page = await _page_of_job_without_its_copy(runtime, owner, State.DONE, text="fine")
    assert "removed after the job ended" in page
    assert "does not exist" not in page


async def test_running_jobs_missing_copy_is_still_a_problem(
    runtime: Runtime, owner: httpx.AsyncClient
) -> None:
    """While the job runs, a copy it points at must exist: a missing one stays the red row."""
    page = await _page_of_job_without_its_copy(runtime, owner, State.CHECK, operation_id="op-1")
    assert 'class="problem">no record: the job points at a file that does not exist' in page
    assert "removed after the job ended" not in page


async def _stored_file(runtime: Runtime, tmp_path: Path) -> FileRecord:
    source = tmp_path / "upload.mp3"
    source.write_bytes(b"ID3 some audio bytes" * 100)
    record = await runtime.services.files.put(secrets.token_urlsafe(16), ".mp3", source, now=T0)
    await runtime.services.repo.put_file(record)
    return record


def _log_text(caplog: pytest.LogCaptureFixture) -> str:
    """The service's own log lines as the service prints them (not the test client's)."""
    formatter = KeyValueFormatter()
    return "\n".join(
        formatter.format(record)
        for record in caplog.records
        if record.name.startswith("transcriber")
    )


async def test_download_logs_no_file_id(
    runtime: Runtime, owner: httpx.AsyncClient, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Acceptance 12: a download is logged by size and extension; the id (the stored name) never."""
    record = await _stored_file(runtime, tmp_path)
    caplog.set_level(logging.DEBUG)
    answer = await owner.get(f"/admin/files/{record.id}")
    assert answer.status_code == 200
    assert len(answer.content) == record.size
    logged = _log_text(caplog)
    assert "event=admin.download " in logged
    assert f"size={record.size}" in logged
    assert record.id not in logged


class BrokenStore(Delegate):
    """The real file store, but reading any file fails as an unreachable storage would."""

    def open(self, record: FileRecord) -> AsyncIterator[bytes]:
        return self._fail()

    async def _fail(self) -> AsyncIterator[bytes]:
        raise StorageUnavailable
        yield b""  # pragma: no cover - makes this an async generator


async def test_failed_download_logs_no_file_id(
    runtime: Runtime, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A download the store cannot serve answers 503 and logs the failure without the id."""
    record = await _stored_file(runtime, tmp_path)
    broken = BrokenStore(runtime.services.files)
    failing = attrs.evolve(runtime, services=attrs.evolve(runtime.services, files=broken))
    caplog.set_level(logging.DEBUG)
    async for client in _owner(failing):
        answer = await client.get(f"/admin/files/{record.id}")
        assert answer.status_code == 503
    logged = _log_text(caplog)
    assert "event=admin.download_failed " in logged
    assert record.id not in logged
