"""Deletion, token ownership and retention through the real server process (ADR 36)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest

from tests.support.admin import (
    csrf_of,
    direct_access,
    owner_client,
    service_with_owner,
    write_job,
)
from tests.support.service import Service, running_service
from transcriber_core.entities import Origin, State
from transcriber_core.errors import JobNotFound

pytestmark = pytest.mark.slow

TOKENS = ["owner-token-Zm9vYmFy", "other-token-YmF6cXV4"]


def bearer(token: str) -> dict[str, str]:
    """The Authorization header for ``token``."""
    return {"Authorization": f"Bearer {token}"}


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Service]:
    """The service with two API tokens."""
    config = {"http": {"api_tokens": TOKENS}}
    with running_service(tmp_path_factory.mktemp("lifecycle-api"), config=config) as started:
        yield started


@pytest.fixture(scope="module")
def panel(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Service]:
    """An open API with an owner, sweeping every 0.2 s, for the admin and retention tests."""
    config = {"retention": {"sweep_seconds": 0.2}}
    with service_with_owner(tmp_path_factory.mktemp("lifecycle-panel"), config=config) as started:
        yield started


@pytest.fixture
def recording_file(tmp_path: Path, recording: bytes) -> Path:
    """The recording as a file, for jobs written straight into the data dir."""
    path = tmp_path / "tone.mp3"
    path.write_bytes(recording)
    return path


@pytest.fixture
async def owner(panel: Service) -> AsyncIterator[httpx.AsyncClient]:
    """A client logged in as the panel's owner."""
    async with owner_client(panel) as client:
        yield client


def uploaded_and_done(service: Service, recording: bytes, token: str) -> str:
    """Upload with ``token`` and wait until the job is done; its id."""
    with service.client(headers=bearer(token)) as client:
        response = client.post("/api/audio", files={"file": ("voice.mp3", recording)})
    assert response.status_code == 202, response.text
    job_id: str = response.json()["job_id"]
    assert service.wait_for_job(job_id, headers=bearer(token))["state"] == "done"
    return job_id


def file_names_of(service: Service, job_id: str) -> list[str]:
    """Stored names of the job's files, read from its rows."""
    rows = service.query(
        "SELECT files.id || files.extension FROM jobs JOIN files ON files.id IN"
        " (jobs.source_file_id, jobs.converted_file_id, jobs.storage_file_id)"
        " WHERE jobs.id = ?",
        (job_id,),
    )
    return [row[0] for row in rows]


def test_delete_takes_the_job_and_its_files_and_then_answers_404(
    api: Service, recording: bytes
) -> None:
    """DELETE answers 204; afterwards status and DELETE are 404 and no file or row is left."""
    job_id = uploaded_and_done(api, recording, TOKENS[0])
    names = file_names_of(api, job_id)
    assert len(names) == 2
    assert set(names) <= set(api.stored_names())
    with api.client(headers=bearer(TOKENS[0])) as client:
        deleted = client.delete(f"/api/jobs/{job_id}")
        assert deleted.status_code == 204, deleted.text
        assert deleted.content == b""
        gone = client.get(f"/api/status/{job_id}")
        assert gone.status_code == 404
        assert gone.json()["error"] == "job_not_found"
        assert client.delete(f"/api/jobs/{job_id}").status_code == 404
    assert not set(names) & set(api.stored_names())
    assert api.query("SELECT count(*) FROM jobs WHERE id = ?", (job_id,)) == [(0,)]
    assert api.query(
        "SELECT count(*) FROM files WHERE id || extension IN (?, ?)", tuple(names)
    ) == [(0,)]
    log = api.logs()
    assert f"job_id={job_id}" in log
    assert all(name not in log for name in names)


def test_another_tokens_job_is_the_same_404_as_an_unknown_one(
    api: Service, recording: bytes
) -> None:
    """Another token reads no status or transcript and deletes nothing: the unknown id's 404."""
    job_id = uploaded_and_done(api, recording, TOKENS[0])
    with api.client(headers=bearer(TOKENS[1])) as other:
        unknown = other.get("/api/status/no-such-job-id")
        status = other.get(f"/api/status/{job_id}")
        transcript = other.get(f"/api/jobs/{job_id}/transcript", params={"format": "srt"})
        delete = other.delete(f"/api/jobs/{job_id}")
    for answer in (status, transcript, delete):
        assert answer.status_code == 404
        assert answer.json() == unknown.json()
    with api.client(headers=bearer(TOKENS[0])) as mine:
        assert mine.get(f"/api/jobs/{job_id}/transcript").status_code == 200
    assert api.wait_for_job(job_id, headers=bearer(TOKENS[0]))["state"] == "done"


async def test_a_job_sent_without_a_token_is_reached_by_no_token(api: Service) -> None:
    """A Telegram job (no owner) is a 404 for every configured token, status and delete alike."""
    job = await write_job(api, state=State.DONE, text="private words", origin=Origin.telegram(5, 6))
    for token in TOKENS:
        with api.client(headers=bearer(token)) as client:
            assert client.get(f"/api/status/{job.id}").status_code == 404
            assert client.delete(f"/api/jobs/{job.id}").status_code == 404
    assert api.query("SELECT count(*) FROM jobs WHERE id = ?", (job.id,)) == [(1,)]


def test_delete_needs_a_token(api: Service) -> None:
    """Without a configured token DELETE is 401 like the other /api routes."""
    with api.client() as client:
        answer = client.delete("/api/jobs/anything")
    assert answer.status_code == 401
    assert answer.json()["error"] == "unauthorized"


def test_the_owner_token_is_stored_only_as_its_hash(api: Service, recording: bytes) -> None:
    """The jobs table holds the SHA-256 of the token that sent the job, never the token."""
    job_id = uploaded_and_done(api, recording, TOKENS[1])
    [(owner,)] = api.query("SELECT owner FROM jobs WHERE id = ?", (job_id,))
    assert len(owner) == 64
    database = (api.data_dir / "transcriber.db").read_bytes()
    assert all(token.encode() not in database for token in TOKENS)


async def test_the_admin_delete_button_deletes_the_job(
    panel: Service, owner: httpx.AsyncClient, recording: bytes
) -> None:
    """The job page's Delete form (POST with CSRF) deletes the job and its files."""
    with panel.client() as client:
        response = client.post("/api/audio", files={"file": ("voice.mp3", recording)})
    job_id = response.json()["job_id"]
    panel.wait_for_job(job_id)
    names = file_names_of(panel, job_id)
    listed = await owner.get("/admin/")
    assert "Files go" in listed.text
    assert 'class="time files-go"' in listed.text
    page = await owner.get(f"/admin/jobs/{job_id}")
    assert 'id="delete"' in page.text
    assert 'id="files-go"' in page.text
    refused = await owner.post(f"/admin/jobs/{job_id}/delete", data={})
    assert refused.status_code == 403
    answer = await owner.post(f"/admin/jobs/{job_id}/delete", data={"csrf": csrf_of(page.text)})
    assert answer.status_code == 303
    assert (await owner.get(f"/admin/jobs/{job_id}")).status_code == 404
    with panel.client() as client:
        assert client.get(f"/api/status/{job_id}").status_code == 404
    assert not set(names) & set(panel.stored_names())


async def test_retention_sweeps_files_then_jobs_by_their_end(
    panel: Service, recording_file: Path
) -> None:
    """A job ended 8 days ago loses its recording, one ended 31 days ago goes; a fresh one stays."""
    now = datetime.now(UTC)
    kept = await write_job(panel, state=State.DONE, source=recording_file, text="t", ended=now)
    files_go = await write_job(
        panel, state=State.DONE, source=recording_file, text="t", ended=now - timedelta(days=8)
    )
    job_goes = await write_job(
        panel, state=State.FAILED, source=recording_file, error="e", ended=now - timedelta(days=31)
    )
    panel.wait_for_log("retention.swept", "jobs=1")
    panel.wait_for_log("retention.swept", "recordings=1")
    async with direct_access(panel) as (repo, _):
        stripped = await repo.get(files_go.id)
        assert stripped.file_ids() == ()
        assert stripped.text == "t"
        with pytest.raises(JobNotFound):
            await repo.get(job_goes.id)
        assert await repo.get(kept.id) == kept
    stored = panel.stored_names()
    assert f"{kept.source_file_id}.mp3" in stored
    assert f"{files_go.source_file_id}.mp3" not in stored
    assert f"{job_goes.source_file_id}.mp3" not in stored


def database_bytes(service: Service) -> dict[str, bytes]:
    """The database file and its -wal, as a copy of the data dir would hold them now."""
    base = service.data_dir / "transcriber.db"
    return {
        path.name: path.read_bytes()
        for path in (base, base.with_name(base.name + "-wal"))
        if path.exists()
    }


def test_a_deleted_transcript_is_in_neither_the_database_nor_its_wal(
    tmp_path: Path, recording: bytes
) -> None:
    """After DELETE, the running service's db and -wal hold neither the job id nor its text."""
    with running_service(tmp_path) as service:
        with service.client() as client:
            answer = client.post("/api/audio", files={"file": ("voice.mp3", recording)})
            job_id = answer.json()["job_id"]
            done = service.wait_for_job(job_id)
            assert done["state"] == "done"
            text = done["text"].encode()
            assert text
            assert any(text in content for content in database_bytes(service).values())
            assert client.delete(f"/api/jobs/{job_id}").status_code == 204
        for name, content in database_bytes(service).items():
            assert job_id.encode() not in content, name
            assert text not in content, name
