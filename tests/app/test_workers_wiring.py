"""``[workers]`` reaches the running service: loops per step, the lane limits, the header probe."""

from __future__ import annotations

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
            convert=3, recognize=0, check=1, express_bytes=1000, express_seconds=30
        ),
    )
    runtime = await build(config)
    try:
        assert runtime.workers.concurrency == {State.CONVERT: 3, State.RECOGNIZE: 0, State.CHECK: 1}
        settings = runtime.services.settings
        assert (settings.express_bytes, settings.express_duration) == (1000, timedelta(seconds=30))
        assert isinstance(runtime.services.probe, HeaderProbe)
    finally:
        await runtime.close()
