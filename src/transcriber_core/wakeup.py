"""Wakes idle workers of a state (or the delivery loops) at once when work arrives in-process."""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Iterable

from transcriber_core.entities import STEP_STATES

#: The key that wakes the delivery loops of the outbox (ADR 35).
OUTBOX = "outbox"
#: The key that wakes the summary loops (ADR 83).
SUMMARIES = "summaries"


class Wakeup:
    """One event per step state and one for the outbox, replaced each time it fires.

    A worker takes a ``token`` before asking the queue for work and waits on
    that token (``await token.wait()``) when there was none, so a wake-up
    that lands in between is never missed.

    Jobs have tokens of their own (``job_token``, ``job_changed``): an answer
    that waits for a job (``/v1``, ADR 46) takes one before reading the job and
    waits on it. They are held weakly: a token nobody waits on any more goes.
    """

    def __init__(self, states: Iterable[str] = (*STEP_STATES, OUTBOX, SUMMARIES)) -> None:
        self._events = {state: asyncio.Event() for state in states}
        self._jobs: weakref.WeakValueDictionary[str, asyncio.Event] = weakref.WeakValueDictionary()

    def job_token(self, job_id: str) -> asyncio.Event:
        """The event that the next ``job_changed(job_id)`` (or ``job_changed("")``) sets."""
        event = self._jobs.get(job_id)
        if event is None:
            event = self._jobs[job_id] = asyncio.Event()
        return event

    def job_changed(self, job_id: str) -> None:
        """Wake whoever waits on ``job_id`` (it ended, or a part of it was recognised).

        ``""`` wakes every job's waiters: after a lost feed, anything may have changed.
        """
        if job_id == "":
            events = list(self._jobs.values())
            self._jobs.clear()
        else:
            event = self._jobs.pop(job_id, None)
            events = [] if event is None else [event]
        for event in events:
            event.set()

    def token(self, state: str) -> asyncio.Event:
        """The event that the next ``notify(state)`` sets."""
        return self._events[state]

    def notify(self, state: str) -> None:
        """Wake every worker waiting on ``state``; states without workers are ignored."""
        event = self._events.get(state)
        if event is not None:
            self._events[state] = asyncio.Event()
            event.set()
