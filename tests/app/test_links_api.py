"""``url`` at ``POST /api/audio`` and the fetch's progress in ``/api/status`` (SPEC §28, ADR 85)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import attrs
import httpx
import pytest

from tests.support.admin import in_process_client
from tests.support.openapi import Conformance
from transcriber_adapters.memory import ManualClock, MemoryFetcher, Served
from transcriber_app.bootstrap import DEMO_LINK, Runtime, build
from transcriber_app.config import Config, HttpConfig, StorageConfig
from transcriber_app.web.api import api_document
from transcriber_core.entities import State

#: A link with a secret in its query: it must never be logged or echoed.
LINK = "https://media.example.org/talk.mp3?sig=TOPSECRET"
PRIVATE = "http://10.1.2.3/talk.mp3?sig=TOPSECRET"
PLAYLIST = "https://video.example.org/playlist?list=TOPSECRET"


@pytest.fixture
def fetcher() -> MemoryFetcher:
    return MemoryFetcher(
        {
            LINK: Served(data=DEMO_LINK.data, title="A talk", declared_bytes=len(DEMO_LINK.data)),
            PRIVATE: Served(refused_at_check="url_not_allowed"),
            PLAYLIST: Served(refused_at_check="playlist_not_supported"),
        }
    )


@pytest.fixture
async def runtime(
    tmp_path: Path, clock: ManualClock, fetcher: MemoryFetcher
) -> AsyncIterator[Runtime]:
    """A built runtime whose links are served by ``fetcher``; no workers run."""
    config = Config(
        storage=StorageConfig(data_dir=tmp_path / "data"),
        http=HttpConfig(host="127.0.0.1", port=8123),
    )
    built = await build(config, clock=clock, fetcher=fetcher)
    yield built
    await built.close()


@pytest.fixture
def conformance() -> Conformance:
    return Conformance(api_document(tokens=False))


async def _send(
    client: httpx.AsyncClient, fields: dict[str, Any], headers: dict[str, str] | None = None
) -> httpx.Response:
    """``POST /api/audio`` as multipart: each field a text part, ``file`` a file part."""
    files = {
        name: (("voice.mp3", value) if name == "file" else (None, value))
        for name, value in fields.items()
    }
    return await client.post("/api/audio", files=files, headers=headers or {})


async def test_a_link_becomes_a_job_in_fetch_with_its_progress(
    runtime: Runtime, conformance: Conformance
) -> None:
    """202 with the job; its status is fetch with 0 bytes and totals unknown, as documented."""
    async with in_process_client(runtime) as client:
        answer = await _send(client, {"url": LINK, "language": "auto"})
        conformance(answer)
        assert answer.status_code == 202, answer.text
        job_id = answer.json()["job_id"]
        status = await client.get(f"/api/status/{job_id}")
    conformance(status)
    body = status.json()
    assert body["state"] == "fetch"
    assert body["fetch"] == {"bytes": 0, "total_bytes": None, "percent": None}
    job = await runtime.services.jobs.get(job_id)
    assert (job.source_url, job.source_file_id) == (LINK, None)


async def test_status_shows_the_bytes_fetched(
    runtime: Runtime, clock: ManualClock, conformance: Conformance
) -> None:
    """Mid-fetch: the bytes so far, the declared total and the percent; gone once converted."""
    async with in_process_client(runtime) as client:
        job_id = (await _send(client, {"url": LINK})).json()["job_id"]
        repo = runtime.services.repo
        leased = await repo.acquire(State.FETCH, acquisition_id="lease-f", lease=timedelta(0))
        assert leased is not None
        await repo.save_progress_if_held(job_id, 8_000.0, acquisition_id="lease-f", total=32_000.0)
        status = await client.get(f"/api/status/{job_id}")
    conformance(status)
    assert status.json()["fetch"] == {"bytes": 8_000, "total_bytes": 32_000, "percent": 25}
    assert "progress" not in status.json()


@pytest.mark.parametrize(
    ("fields", "code"),
    [
        ({"url": LINK, "file": b"RIFF"}, "file_and_url"),
        ({"language": "auto"}, "missing_file"),
        ({"url": "ftp://media.example.org/a.mp3?sig=TOPSECRET"}, "bad_url"),
        ({"url": "TOPSECRET not a link"}, "bad_url"),
        ({"url": PRIVATE}, "url_not_allowed"),
        ({"url": PLAYLIST}, "playlist_not_supported"),
    ],
)
async def test_a_refused_link_is_a_400_that_never_names_it(
    runtime: Runtime,
    conformance: Conformance,
    caplog: pytest.LogCaptureFixture,
    fields: dict[str, Any],
    code: str,
) -> None:
    """Both fields, neither, a bad or refused link: 400 with the code; no job; no secret told."""
    caplog.set_level(logging.DEBUG)
    async with in_process_client(runtime) as client:
        answer = await _send(client, fields)
    conformance(answer)
    assert answer.status_code == 400
    assert answer.json()["error"] == code
    assert "TOPSECRET" not in answer.text
    assert await runtime.services.listings.count_by_state() == {}
    assert all("TOPSECRET" not in record.getMessage() for record in caplog.records)
    assert "TOPSECRET" not in caplog.text
    assert any(r.getMessage() == "upload.refused" for r in caplog.records)


async def test_a_link_sent_again_with_its_key_is_the_same_job(runtime: Runtime) -> None:
    """Idempotency-Key with the same link: the first job; with another link: 422."""
    key = {"Idempotency-Key": "link-1"}
    async with in_process_client(runtime) as client:
        first = await _send(client, {"url": LINK}, key)
        again = await _send(client, {"url": LINK}, key)
        other = await _send(client, {"url": LINK + "&b=2"}, key)
    assert first.status_code == again.status_code == 202
    assert again.json()["job_id"] == first.json()["job_id"]
    assert again.headers["Idempotent-Replayed"] == "true"
    assert other.status_code == 422
    assert other.json()["error"] == "idempotency_key_reused"


async def test_links_are_refused_where_nothing_fetches_them(
    tmp_path: Path, clock: ManualClock
) -> None:
    """A service without a fetcher (not the memory demo, no yt-dlp) answers ``links_disabled``."""
    config = Config(storage=StorageConfig(data_dir=tmp_path / "data"))
    built = await build(config, clock=clock)
    try:
        services = built.services
        # The demo's fetcher stands in for yt-dlp here; without one, links are refused.
        built = attrs.evolve(built, services=attrs.evolve(services, fetcher=None))
        async with in_process_client(built) as client:
            answer = await _send(client, {"url": LINK})
    finally:
        await built.close()
    assert answer.status_code == 400
    assert answer.json()["error"] == "links_disabled"


async def test_the_workers_carry_a_link_to_its_transcript(runtime: Runtime) -> None:
    """With the process's loops running, a link is fetched, converted and transcribed."""
    runtime.workers.start()
    try:
        async with in_process_client(runtime) as client:
            job_id = (await _send(client, {"url": LINK})).json()["job_id"]
            wakeup = runtime.services.wakeup
            async with asyncio.timeout(30):
                while True:
                    ended = wakeup.job_token(job_id)
                    job = await runtime.services.jobs.get(job_id)
                    if job.state.is_terminal:
                        break
                    await ended.wait()
            status = (await client.get(f"/api/status/{job_id}")).json()
    finally:
        await runtime.workers.drain(1)
    assert (status["state"], "fetch" in status) == ("done", False)
    assert job.source_file_id is not None
    assert job.duration == pytest.approx(3.0, abs=0.05)
