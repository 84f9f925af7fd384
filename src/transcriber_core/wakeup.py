"""Wakes idle workers of a state at once when work arrives in the same process."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable

from transcriber_core.entities import STEP_STATES, State


class Wakeup:
    """One event per step state, replaced each time it fires.

    A worker takes a ``token`` before asking the queue for work and waits on
    that token (``await token.wait()``) when there was none, so a wake-up
    that lands in between is never missed.
    """

    def __init__(self, states: Iterable[State] = STEP_STATES) -> None:
        self._events = {state: asyncio.Event() for state in states}

    def token(self, state: State) -> asyncio.Event:
        """The event that the next ``notify(state)`` sets."""
        return self._events[state]

    def notify(self, state: State) -> None:
        """Wake every worker waiting on ``state``; states without workers are ignored."""
        event = self._events.get(state)
        if event is not None:
            self._events[state] = asyncio.Event()
            event.set()
