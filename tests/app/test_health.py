"""``GET /health`` in-process: 200 while the database answers, 503 once it does not."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path

import httpx
import pytest

from transcriber_adapters.memory import ManualClock
from transcriber_app.bootstrap import Runtime, build
from transcriber_app.config import Config, HttpConfig, StorageConfig
from transcriber_app.web import create_app


@pytest.fixture
async def runtime(tmp_path: Path, clock: ManualClock) -> AsyncIterator[Runtime]:
    """A runtime built on a fresh data dir, as ``serve`` builds it; no workers run."""
    config = Config(
        storage=StorageConfig(data_dir=tmp_path / "data"),
        http=HttpConfig(host="127.0.0.1", port=8123),
    )
    built = await build(config, clock=clock)
    yield built
    await built.close()


async def test_health_is_503_when_the_database_is_closed(runtime: Runtime, tmp_path: Path) -> None:
    """With the database gone (its repository closed), /health answers 503 and names no path."""
    app = create_app(runtime)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
        assert (await client.get("/health")).status_code == 200
        await runtime.services.repo.close()
        response = await client.get("/health")
    assert response.status_code == 503
    assert str(tmp_path) not in response.text


async def _health(runtime: Runtime) -> httpx.Response:
    transport = httpx.ASGITransport(app=create_app(runtime))
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
        return await client.get("/health")


async def test_health_names_a_refused_key_until_it_clears(runtime: Runtime) -> None:
    """A key refused anywhere in the deployment is 503 with its code; cleared, it is 200 again."""
    conditions = runtime.services.conditions
    assert conditions is not None
    await conditions.report(
        "recognizer_credentials_rejected", scope="", message="refused (HTTP 401)"
    )
    response = await _health(runtime)
    assert response.status_code == 503
    body = response.json()
    assert body["error"] == "recognizer_credentials_rejected"
    assert [c["code"] for c in body["conditions"]] == ["recognizer_credentials_rejected"]
    assert "401" not in response.text, "details are for the log and the admin page"
    await conditions.clear(frozenset({"recognizer_credentials_rejected"}), scopes=frozenset({""}))
    assert (await _health(runtime)).status_code == 200


async def test_old_notes_and_other_hosts_disks_do_not_count(
    runtime: Runtime, clock: ManualClock
) -> None:
    """A condition nobody saw for its max age, or another host's full disk, leaves health 200."""
    conditions = runtime.services.conditions
    assert conditions is not None
    await conditions.report("storage_bucket_missing", scope="", message="m")
    clock.advance(runtime.services.settings.condition_max_age + timedelta(seconds=1))
    await conditions.report("disk_full", scope="another-host", message="m")
    assert (await _health(runtime)).status_code == 200


async def test_free_space_below_the_minimum_is_disk_full(tmp_path: Path) -> None:
    """With less free space than [storage] min_free_bytes, health says disk_full, stored or not."""
    config = Config(
        storage=StorageConfig(data_dir=tmp_path / "data", min_free_bytes=2**62),
        http=HttpConfig(host="127.0.0.1", port=8123),
    )
    built = await build(config)
    try:
        response = await _health(built)
    finally:
        await built.close()
    assert response.status_code == 503
    assert response.json()["error"] == "disk_full"
