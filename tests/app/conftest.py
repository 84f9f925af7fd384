"""Fixtures for the panel run in-process: a built runtime on a fresh data dir and its clock."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.support.admin import T0
from transcriber_adapters.memory import ManualClock
from transcriber_app.bootstrap import Runtime, build
from transcriber_app.config import Config, HttpConfig, StorageConfig


@pytest.fixture
def clock() -> ManualClock:
    """The runtime's clock, moved by the test."""
    return ManualClock(T0)


@pytest.fixture
async def runtime(tmp_path: Path, clock: ManualClock) -> AsyncIterator[Runtime]:
    """A built runtime on a fresh data dir with a clock the test moves; no workers run."""
    config = Config(
        storage=StorageConfig(data_dir=tmp_path / "data"),
        http=HttpConfig(host="127.0.0.1", port=8123),
    )
    built = await build(config, clock=clock)
    yield built
    await built.close()
