"""``GET /health`` in-process: 200 while the database answers, 503 once it does not."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

from transcriber_app.bootstrap import Runtime, build
from transcriber_app.config import Config, HttpConfig, StorageConfig
from transcriber_app.web import create_app


@pytest.fixture
async def runtime(tmp_path: Path) -> AsyncIterator[Runtime]:
    """A runtime built on a fresh data dir, as ``serve`` builds it; no workers run."""
    config = Config(
        storage=StorageConfig(data_dir=tmp_path / "data"),
        http=HttpConfig(host="127.0.0.1", port=8123),
    )
    built = await build(config)
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
