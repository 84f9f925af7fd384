"""Wakes idle workers of a state (or the delivery loops) at once when work arrives in-process."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable

from transcriber_core.entities import STEP_STATES

#: The key that wakes the delivery loops of the outbox (ADR 35).
OUTBOX = "outbox"


class Wakeup:
    """One event per step state and one for the outbox, replaced each time it fires.

    A worker takes a ``token`` before asking the queue for work and waits on
    that token (``await token.wait()``) when there was none, so a wake-up
    that lands in between is never missed.
    """

    def __init__(self, states: Iterable[str] = (*STEP_STATES, OUTBOX)) -> None:
        self._events = {state: asyncio.Event() for state in states}

    def token(self, state: str) -> asyncio.Event:
        """The event that the next ``notify(state)`` sets."""
        return self._events[state]

    def notify(self, state: str) -> None:
        """Wake every worker waiting on ``state``; states without workers are ignored."""
        event = self._events.get(state)
        if event is not None:
            self._events[state] = asyncio.Event()
            event.set()
