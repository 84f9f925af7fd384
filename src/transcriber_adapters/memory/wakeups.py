"""``MemoryWakeupFeed``: wake-ups between processes simulated in one, for tests (ADR 31).

One feed object stands for the channel every process listens on: each
``listen`` call is one process's listener, and ``publish`` reaches them
all, as a PostgreSQL ``NOTIFY`` reaches every ``LISTEN``ing connection.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable

from transcriber_core.entities import State

_Listener = tuple[asyncio.AbstractEventLoop, Callable[[State], None]]


class MemoryWakeupFeed:
    """A broadcast of ready states to every listener; ``published`` records each state sent."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._listeners: list[_Listener] = []
        #: Every published state, oldest first.
        self.published: list[State] = []

    @property
    def listeners(self) -> int:
        """How many ``listen`` calls are running now."""
        with self._lock:
            return len(self._listeners)

    def publish(self, state: State) -> None:
        """Tell every listener that work in ``state`` just became ready; from any thread."""
        with self._lock:
            self.published.append(state)
            listeners = list(self._listeners)
        for loop, notify in listeners:
            try:
                loop.call_soon_threadsafe(notify, state)
            except RuntimeError:
                # That listener's loop is closed: its process is gone.
                continue

    async def listen(self, notify: Callable[[State], None]) -> None:
        """Call ``notify(state)`` for each published state until cancelled; never raises."""
        listener = (asyncio.get_running_loop(), notify)
        with self._lock:
            self._listeners.append(listener)
        try:
            await asyncio.Event().wait()
        finally:
            with self._lock:
                self._listeners.remove(listener)

    def reset(self) -> None:
        """Forget what was published; running listeners stay."""
        with self._lock:
            self.published.clear()
