"""``[workers]`` reaches the running service: loops per step, the lane limits, the header probe."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from pathlib import Path

from transcriber_adapters.media_header import HeaderProbe
from transcriber_app.bootstrap import build
from transcriber_app.config import Config, StorageConfig, WorkersConfig
from transcriber_core.entities import State


async def test_build_runs_the_configured_loops(tmp_path: Path) -> None:
    """Each step gets the configured loop count (0 included) and the express limits."""
    config = Config(
        storage=StorageConfig(data_dir=tmp_path / "data"),
        workers=WorkersConfig(
            convert=3, recognize=0, check=1, fetch=1, express_bytes=1000, express_seconds=30
        ),
    )
    runtime = await build(config)
    try:
        assert runtime.workers.concurrency == {
            State.FETCH: 1,
            State.CONVERT: 3,
            State.RECOGNIZE: 0,
            State.CHECK: 1,
        }
        settings = runtime.services.settings
        assert (settings.express_bytes, settings.express_duration) == (1000, timedelta(seconds=30))
        assert isinstance(runtime.services.probe, HeaderProbe)
    finally:
        await runtime.close()


async def test_no_loops_start_only_the_sweeper(tmp_path: Path) -> None:
    """With every step count at 0 only the sweeper starts: no loop, poller or delivery loop."""
    config = Config(
        storage=StorageConfig(data_dir=tmp_path / "data"),
        workers=WorkersConfig(convert=0, recognize=0, check=0),
    )
    runtime = await build(config)
    try:
        before = asyncio.all_tasks()
        runtime.workers.start()
        started = {task.get_name() for task in asyncio.all_tasks() - before}
        assert started == {"transcriber-retention"}
        await runtime.workers.drain(0)
    finally:
        await runtime.close()


async def test_one_loop_starts_the_poller_too(tmp_path: Path) -> None:
    """The counterpart: one loop of one step starts it, the poller, delivery loops, sweeper."""
    config = Config(
        storage=StorageConfig(data_dir=tmp_path / "data"),
        workers=WorkersConfig(convert=0, recognize=1, check=0),
    )
    runtime = await build(config)
    try:
        before = asyncio.all_tasks()
        runtime.workers.start()
        started = {task.get_name() for task in asyncio.all_tasks() - before}
        assert started == {
            "transcriber-poller",
            "transcriber-recognize-0",
            # [workers] deliver = 2 by default: the outbox's notice loops (ADR 35), and
            # four webhook loops for each, which a hanging receiver cannot take (ADR 44).
            "transcriber-deliver-notice-0",
            "transcriber-deliver-notice-1",
            *(f"transcriber-deliver-webhook-{n}" for n in range(8)),
            "transcriber-retention",
        }
        await runtime.workers.drain(0)
    finally:
        await runtime.close()
