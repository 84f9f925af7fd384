"""Uploads in flight (SPEC §29): the sender is checked again when the body ends; a whole deadline.

The red team disabled a person while their upload was still arriving: it
landed as their job. And an upload had no limit on its whole time, only on
the gap between two bytes. Each body here is a generator that acts between
its chunks, so the order of events is fixed, never timed.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import httpx
import pytest

from tests.app.test_workspace import bearer, csrf, make_token, owner, person
from tests.support.admin import in_process_client
from tests.support.media import tone
from tests.support.multipart import CONTENT_TYPE, closing, form, part
from transcriber_adapters.memory import ManualClock
from transcriber_app.bootstrap import Runtime, build
from transcriber_app.conditions import DiskSpace
from transcriber_app.config import Config, HttpConfig, StorageConfig
from transcriber_core.people import Person

__all__ = ["owner"]  # the workspace's owner fixture, used by the tests here

#: What the body does between its two halves.
Between = Callable[[], Awaitable[None]]


def _halves(whole: bytes, between: Between) -> AsyncIterator[bytes]:
    """``whole`` sent in two halves, ``between`` run once the first is sent."""
    half = len(whole) // 2

    async def chunks() -> AsyncIterator[bytes]:
        yield whole[:half]
        await between()
        yield whole[half:]

    return chunks()


def _form(path: str, data: bytes) -> bytes:
    """The form ``path`` takes: the file alone, or ``/v1``'s ``model`` and the file."""
    model = part("model", b"whisper-1") if path.startswith("/v1") else b""
    return model + part("file", data, filename="a.wav") + closing()


async def _alice(runtime: Runtime, owner: httpx.AsyncClient) -> tuple[httpx.AsyncClient, Person]:
    """Alice's signed-in client and her person record."""
    client = await person(runtime, owner, "alice")
    found = await runtime.people.find_person("alice")
    assert found is not None
    return client, found


@pytest.mark.parametrize("path", ["/api/audio", "/v1/audio/transcriptions"])
async def test_a_token_upload_from_a_person_disabled_meanwhile_stores_nothing(
    runtime: Runtime, owner: httpx.AsyncClient, tmp_path: Path, path: str
) -> None:
    """Disabled while the body arrives: 401 once it ends, and no job, file or charge is left."""
    alice, record = await _alice(runtime, owner)
    token = await make_token(alice)
    data = tone(tmp_path / "a.wav", 1.0).read_bytes()

    async def disable() -> None:
        await runtime.people.disable_person(record.id, now=runtime.services.clock.now())

    headers = bearer(token) | {"Content-Type": CONTENT_TYPE}
    answer = await alice.post(path, content=_halves(_form(path, data), disable), headers=headers)
    assert answer.status_code == 401, answer.text
    assert await runtime.services.repo.list_owned_jobs(record.owner_key) == []
    assert runtime.services.usage is not None
    assert (await runtime.services.usage.usage([record.owner_key]))[record.owner_key].today == 0


async def test_a_page_upload_from_a_person_disabled_meanwhile_stores_nothing(
    runtime: Runtime, owner: httpx.AsyncClient, tmp_path: Path
) -> None:
    """The upload page's request is refused 403 when its person was disabled while it ran."""
    alice, record = await _alice(runtime, owner)
    page = await alice.get("/w/upload")
    data = tone(tmp_path / "a.wav", 1.0).read_bytes()

    async def disable() -> None:
        await runtime.people.disable_person(record.id, now=runtime.services.clock.now())

    headers = {"X-CSRF-Token": csrf(page.text), "Content-Type": CONTENT_TYPE}
    answer = await alice.post(
        "/w/upload", content=_halves(_form("/w/upload", data), disable), headers=headers
    )
    assert answer.status_code == 403, answer.text
    assert answer.json()["error"] == "not_signed_in"
    assert await runtime.services.repo.list_owned_jobs(record.owner_key) == []


async def test_a_token_revoked_meanwhile_stores_nothing(
    runtime: Runtime, owner: httpx.AsyncClient, tmp_path: Path
) -> None:
    """A token revoked while its upload arrives is refused when the body ends; Alice stays."""
    alice, record = await _alice(runtime, owner)
    token = await make_token(alice)
    [made] = await runtime.people.list_tokens(record.id)
    data = tone(tmp_path / "a.wav", 1.0).read_bytes()

    async def revoke() -> None:
        assert await runtime.people.revoke_token(record.id, made.id)

    headers = bearer(token) | {"Content-Type": CONTENT_TYPE}
    answer = await alice.post(
        "/api/audio", content=_halves(_form("/api/audio", data), revoke), headers=headers
    )
    assert answer.status_code == 401, answer.text
    assert await runtime.services.repo.list_owned_jobs(record.owner_key) == []


@pytest.mark.parametrize("path", ["/api/audio", "/w/upload"])
async def test_an_upload_whose_disk_filled_meanwhile_is_still_taken(
    runtime: Runtime,
    owner: httpx.AsyncClient,
    tmp_path: Path,
    path: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Only the sender is asked again when the body ends: a body already in is not a 507."""
    alice, record = await _alice(runtime, owner)
    token = await make_token(alice)
    page = await alice.get("/w/upload")
    data = tone(tmp_path / "a.wav", 1.0).read_bytes()

    async def fill_the_disk() -> None:
        monkeypatch.setattr(DiskSpace, "is_short", lambda _self: True)

    headers = {"Content-Type": CONTENT_TYPE} | (
        {"X-CSRF-Token": csrf(page.text)} if path == "/w/upload" else bearer(token)
    )
    answer = await alice.post(
        path, content=_halves(_form(path, data), fill_the_disk), headers=headers
    )
    assert answer.status_code == 202, answer.text
    [job] = await runtime.services.repo.list_owned_jobs(record.owner_key)
    assert job.id == answer.json()["job_id"]


@pytest.fixture
async def hurried(tmp_path: Path, clock: ManualClock) -> AsyncIterator[Runtime]:
    """A runtime whose uploads must arrive whole within half a second (and may pause 5 min)."""
    config = Config(
        storage=StorageConfig(data_dir=tmp_path / "data"),
        http=HttpConfig(host="127.0.0.1", port=8123, upload_deadline_seconds=0.5),
    )
    built = await build(config, clock=clock)
    yield built
    await built.close()


async def test_an_upload_that_trickles_past_its_deadline_is_408(hurried: Runtime) -> None:
    """A sender never silent long enough for the inactivity timeout is stopped by the deadline."""

    async def trickle() -> AsyncIterator[bytes]:
        yield form(b"", filename="a.wav")[:60]
        while True:
            # The sender's own pace: a byte every 10 ms, far inside the 5-minute inactivity.
            await asyncio.sleep(0.01)
            yield b"x"

    async with in_process_client(hurried) as client:
        answer = await client.post(
            "/api/audio", content=trickle(), headers={"Content-Type": CONTENT_TYPE}
        )
    assert answer.status_code == 408, answer.text
    body = answer.json()
    assert body["error"] == "upload_timeout"
    assert "within 0.5 s" in body["message"]
    assert answer.headers["connection"] == "close"
    assert await hurried.services.repo.list_jobs() == []
