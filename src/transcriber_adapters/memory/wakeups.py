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

_Listener = tuple[asyncio.AbstractEventLoop, Callable[[State], None], Callable[[str], None] | None]


class MemoryWakeupFeed:
    """A broadcast of ready states to every listener; ``published`` records each state sent."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._listeners: list[_Listener] = []
        #: Every published state, oldest first.
        self.published: list[State] = []
        #: Every published job id, oldest first.
        self.published_jobs: list[str] = []

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
        for loop, notify, _ in listeners:
            try:
                loop.call_soon_threadsafe(notify, state)
            except RuntimeError:
                # That listener's loop is closed: its process is gone.
                continue

    def publish_job(self, job_id: str) -> None:
        """Tell every listener that the job ``job_id`` ended or advanced; from any thread."""
        with self._lock:
            self.published_jobs.append(job_id)
            listeners = list(self._listeners)
        for loop, _, job_changed in listeners:
            if job_changed is None:
                continue
            try:
                loop.call_soon_threadsafe(job_changed, job_id)
            except RuntimeError:
                continue

    async def listen(
        self,
        notify: Callable[[State], None],
        *,
        job_changed: Callable[[str], None] | None = None,
    ) -> None:
        """Call ``notify(state)``, ``job_changed(id)`` for each one published, until cancelled."""
        listener = (asyncio.get_running_loop(), notify, job_changed)
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
            self.published_jobs.clear()
