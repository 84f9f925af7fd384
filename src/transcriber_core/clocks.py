"""A clock that moves only when told to: for tests, demos and the contract suites.

It lives in the core, not with the memory adapters, so that the contract
suites (which import no adapter) control the stores' time with it. It never
reads the system clock.
"""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta

#: Where a ManualClock starts unless told otherwise.
EPOCH = datetime(2026, 1, 1, tzinfo=UTC)


class ManualClock:
    """Timezone-aware UTC time that changes only through ``advance`` and ``set``."""

    def __init__(self, start: datetime = EPOCH) -> None:
        if start.tzinfo is None:
            raise ValueError("ManualClock needs a timezone-aware start")
        self._now = start
        self._lock = threading.Lock()

    def now(self) -> datetime:
        """The clock's current time."""
        with self._lock:
            return self._now

    def advance(self, delta: timedelta) -> datetime:
        """Move the clock forward by ``delta`` and return the new time."""
        with self._lock:
            self._now += delta
            return self._now

    def set(self, moment: datetime) -> None:
        """Put the clock at ``moment``."""
        with self._lock:
            self._now = moment
