"""``GET /health`` in-process: 200 while the database answers, 503 once it does not."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import attrs
import httpx
import pytest

from tests.support.delegate import Delegate
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


class Counting(Delegate):
    """The real adapter, counting the calls a probe makes to it by method name."""

    def __init__(self, inner: Any) -> None:
        super().__init__(inner)
        self.counts: Counter[str] = Counter()

    def __getattr__(self, name: str) -> Any:
        method = getattr(self.inner, name)
        if not callable(method):
            return method

        async def counted(*args: Any, **kwargs: Any) -> Any:
            self.counts[name] += 1
            return await method(*args, **kwargs)

        return counted


def _counted(runtime: Runtime) -> tuple[Runtime, Counting, Counting]:
    repo = Counting(runtime.services.repo)
    conditions = Counting(runtime.services.conditions)
    services = attrs.evolve(runtime.services, repo=repo, conditions=conditions)
    return attrs.evolve(runtime, services=services), repo, conditions


async def test_a_health_flood_never_counts_jobs_and_shares_one_read(runtime: Runtime) -> None:
    """40 clients at once on /health: no job is counted, and they share the database reads."""
    counted, repo, conditions = _counted(runtime)
    transport = httpx.ASGITransport(app=create_app(counted))
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
        answers = await asyncio.gather(*(client.get("/health") for _ in range(40)))
    assert {answer.status_code for answer in answers} == {200}
    assert repo.counts["count_by_state"] == 0
    assert sum(repo.counts.values()) + conditions.counts["current"] <= 10, (repo, conditions)


async def test_scrapes_share_one_reading_of_the_queue(runtime: Runtime) -> None:
    """Scrapes at once, and right after, share one count of the jobs (a cached gauge)."""
    counted, repo, _ = _counted(runtime)
    transport = httpx.ASGITransport(app=create_app(counted))
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
        answers = await asyncio.gather(*(client.get("/metrics") for _ in range(20)))
        answers += [await client.get("/metrics") for _ in range(5)]
    assert {answer.status_code for answer in answers} == {200}
    assert all('transcriber_jobs{state="done"}' in answer.text for answer in answers)
    assert repo.counts["count_by_state"] <= 2
    assert repo.counts["pending_deliveries"] <= 2
