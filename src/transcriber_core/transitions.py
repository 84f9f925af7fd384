"""The one transition function: every state change in the system goes through it."""

from __future__ import annotations

import enum
from datetime import datetime, timedelta
from typing import Any

import attrs

from transcriber_core.entities import TERMINAL_STATES, Job, State
from transcriber_core.errors import InvalidTransition


class Actor(enum.StrEnum):
    """Who changes the state; it decides what the change clears."""

    #: A step or a worker; keeps the delay it sets and the attempts of a failure.
    PIPELINE = "pipeline"
    #: The owner in the admin panel; every lease, delay and attempt is cleared.
    OWNER = "owner"


#: Where a step may move its job. A step may stay in its state (retry, or the
#: check step's "not ready yet"); only an acquirer moves a job to ``dead``.
PIPELINE_MOVES: dict[State, frozenset[State]] = {
    State.FETCH: frozenset({State.FETCH, State.CONVERT, State.FAILED, State.DEAD}),
    State.CONVERT: frozenset({State.CONVERT, State.RECOGNIZE, State.FAILED, State.DEAD}),
    # Straight to done: a recognizer that finished within its start (ADR 28).
    State.RECOGNIZE: frozenset(
        {State.RECOGNIZE, State.CHECK, State.DONE, State.FAILED, State.DEAD}
    ),
    State.CHECK: frozenset({State.CHECK, State.DONE, State.FAILED, State.DEAD}),
    State.DONE: frozenset(),
    State.FAILED: frozenset(),
    State.DEAD: frozenset(),
}

#: Fields that only the transition function may set.
_OWNED_FIELDS = frozenset(
    {
        "state",
        "attempts",
        "acquisition_id",
        "acquire_time",
        "delay_time",
        "error",
        "ended",
        "updated",
    }
)


def transition(
    job: Job,
    to: State,
    *,
    now: datetime,
    actor: Actor = Actor.PIPELINE,
    error: str | None = None,
    delay_until: datetime | None = None,
    attempt_spent: bool = True,
    **changes: Any,
) -> Job:
    """Move ``job`` to ``to`` and clear what the new state must not keep.

    Every transition releases the lease. A pipeline transition that carries an
    ``error`` is a failed attempt and keeps the attempt count; one without is a
    step that finished and resets it to 0. Terminal states keep no delay.
    An owner's edit clears lease, delay and attempts, whatever the states.
    A job entering a terminal state is stamped ``ended`` (kept when it moves
    from one terminal state to another); a job sent back to a step loses it.

    ``attempt_spent=False`` is a job that waits for the service (disk full,
    credentials refused): it stays in its state with a reason and a delay,
    and gives back the attempt its acquire counted, so waiting never brings
    it closer to ``dead``.
    """
    forbidden = _OWNED_FIELDS.intersection(changes)
    if forbidden:
        raise TypeError(f"transition() sets these fields itself: {sorted(forbidden)}")
    if actor is Actor.PIPELINE:
        _check_pipeline_move(job.state, to, error)
        attempts = job.attempts if error is not None else 0
        if not attempt_spent:
            _check_wait(job.state, to, error, delay_until)
            attempts = max(job.attempts - 1, 0)
    else:
        if not attempt_spent:
            raise InvalidTransition("only the pipeline gives back an attempt")
        attempts = 0
        delay_until = None
    if to in TERMINAL_STATES:
        delay_until = None
    if to is State.DONE:
        error = None
    ended = None
    if to in TERMINAL_STATES:
        ended = job.ended if job.state.is_terminal and job.ended is not None else now
        # What the diarizer heard early served the join: its prints are the job's now.
        changes["heard"] = None
    return attrs.evolve(
        job,
        state=to,
        attempts=attempts,
        acquisition_id=None,
        acquire_time=None,
        delay_time=delay_until,
        error=error,
        ended=ended,
        updated=now,
        **changes,
    )


def _check_pipeline_move(current: State, to: State, error: str | None) -> None:
    if to not in PIPELINE_MOVES[current]:
        raise InvalidTransition(f"a step cannot move a job from {current.value} to {to.value}")
    if to in (State.FAILED, State.DEAD) and error is None:
        raise InvalidTransition(f"a job moved to {to.value} must carry the reason")


def _check_wait(current: State, to: State, error: str | None, delay_until: datetime | None) -> None:
    if to is not current:
        raise InvalidTransition("a job that waits for the service stays in its state")
    if error is None or delay_until is None:
        raise InvalidTransition("a job that waits for the service carries the reason and a delay")


def check_acquirable(state: State) -> None:
    """Refuse a lease on a terminal ``state`` with ``ValueError``: no job there has work left."""
    if state.is_terminal:
        raise ValueError(f"jobs in the terminal state {state.value} are never acquired")


def delay_of(job: Job) -> timedelta | None:
    """The pause ``transition`` gave ``job`` (its ``delay_time`` less its ``updated``), or None.

    Both fields are set by ``transition`` from the same ``now``, so their
    difference is exactly the duration a step chose. The worker hands it to
    ``save_if_held(delay=...)``, which adds it to the store's own clock: a
    worker whose clock is off never delays a job by its skew (ADR 30).
    """
    if job.delay_time is None:
        return None
    return job.delay_time - job.updated
