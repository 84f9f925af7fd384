"""Adapters that pause inside a step until the test lets them go."""

from __future__ import annotations

import asyncio
from pathlib import Path

from transcriber_core.ports import Converter, ProgressCallback


class GatedConverter:
    """Wraps a converter; each call waits for ``release`` and records cancellation."""

    def __init__(self, inner: Converter) -> None:
        self.inner = inner
        self.entered = asyncio.Event()
        self.release = asyncio.Event()
        self.cancelled = asyncio.Event()

    @property
    def output_extension(self) -> str:
        return self.inner.output_extension

    async def convert(
        self,
        source: Path,
        target: Path,
        *,
        on_progress: ProgressCallback | None = None,
        background: bool = False,
    ) -> float:
        self.entered.set()
        try:
            await self.release.wait()
        except asyncio.CancelledError:
            self.cancelled.set()
            raise
        return await self.inner.convert(
            source, target, on_progress=on_progress, background=background
        )
