"""Request budgets in a dict: the budget store of one process, for demos and tests (ADR 29)."""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta

from transcriber_core.budgets import Bucket, level, take_token


class MemoryBudgetStore:
    """Token buckets by name; ``takes`` records every ``take`` and whether it got a token."""

    def __init__(self) -> None:
        self._buckets: dict[str, tuple[Bucket, int, timedelta]] = {}
        self._lock = asyncio.Lock()
        #: Every take, oldest first: (name, taken).
        self.takes: list[tuple[str, bool]] = []

    def reset(self) -> None:
        """Forget every budget and take."""
        self._buckets.clear()
        self.takes.clear()

    async def take(
        self, name: str, *, capacity: int, per: timedelta, now: datetime
    ) -> timedelta | None:
        """Take a token of ``name`` or say how long until one is back."""
        async with self._lock:
            known = self._buckets.get(name)
            bucket = None if known is None else known[0]
            after, wait = take_token(bucket, capacity=capacity, per=per, now=now)
            self._buckets[name] = (after, capacity, per)
            self.takes.append((name, wait is None))
            return wait

    async def levels(self, *, now: datetime) -> dict[str, float]:
        """Tokens each budget used so far holds at ``now``."""
        return {
            name: level(bucket, capacity=capacity, per=per, now=now)
            for name, (bucket, capacity, per) in sorted(self._buckets.items())
        }
