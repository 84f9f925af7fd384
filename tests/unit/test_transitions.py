"""The one transition function and what each state change clears (reference: Jobs and states)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import attrs
import pytest

from transcriber_core.entities import STEP_STATES, TERMINAL_STATES, Job, Origin, State
from transcriber_core.errors import InvalidTransition
from transcriber_core.transitions import Actor, delay_of, transition

T0 = datetime(2026, 4, 1, 10, 0, tzinfo=UTC)
LATER = T0 + timedelta(minutes=1)


def leased(state: State = State.CONVERT, attempts: int = 3) -> Job:
    """A job in ``state`` held by a worker, with a delay and attempts to clear."""
    return Job(
        id="job-1",
        state=state,
        origin=Origin.http(),
        attempts=attempts,
        acquisition_id="lease-1",
        acquire_time=T0,
        delay_time=T0 - timedelta(seconds=1),
        error="earlier failure",
        created=T0,
        updated=T0,
    )


def test_step_success_resets_attempts_and_releases_the_lease() -> None:
    """A step that finishes moves on with attempts 0, no lease and no stale error."""
    job = transition(leased(), State.RECOGNIZE, now=LATER, duration=3.5)
    assert job.state is State.RECOGNIZE
    assert job.attempts == 0
    assert job.acquisition_id is None
    assert job.acquire_time is None
    assert job.error is None
    assert job.duration == 3.5
    assert job.updated == LATER


def test_retry_keeps_attempts_and_sets_the_pause() -> None:
    """A failed attempt stays in its state, keeps its count and waits the pause."""
    until = LATER + timedelta(seconds=4)
    job = transition(leased(), State.CONVERT, now=LATER, error="disk busy", delay_until=until)
    assert job.attempts == 3
    assert job.delay_time == until
    assert job.error == "disk busy"
    assert job.acquisition_id is None


def test_not_ready_check_spends_no_attempt() -> None:
    """The check step's "not ready yet" resets attempts and keeps its poll delay (queue rule 7)."""
    until = LATER + timedelta(seconds=5)
    job = transition(leased(State.CHECK), State.CHECK, now=LATER, delay_until=until)
    assert job.attempts == 0
    assert job.delay_time == until


def test_dead_keeps_the_attempts() -> None:
    """A pipeline save of a dead job keeps its attempts, for the owner to see."""
    job = transition(leased(attempts=6), State.DEAD, now=LATER, error="gave up")
    assert job.attempts == 6
    assert job.delay_time is None


def test_terminal_states_keep_no_delay() -> None:
    """A delay on a finished job would mean nothing; terminal states clear it."""
    job = transition(
        leased(), State.FAILED, now=LATER, error="bad", delay_until=LATER + timedelta(hours=1)
    )
    assert job.delay_time is None


def test_done_clears_the_error_of_earlier_retries() -> None:
    """A job that retried then succeeded shows no error."""
    job = transition(leased(State.CHECK), State.DONE, now=LATER, text="hello")
    assert job.error is None
    assert job.text == "hello"


@pytest.mark.parametrize("to", [State.FAILED, State.DEAD])
def test_failure_states_need_a_reason(to: State) -> None:
    """A job never fails or dies without saying why."""
    with pytest.raises(InvalidTransition, match="reason"):
        transition(leased(), to, now=LATER)


@pytest.mark.parametrize(
    ("current", "to"),
    [
        (State.CONVERT, State.CHECK),
        (State.CONVERT, State.DONE),
        (State.RECOGNIZE, State.CONVERT),
        (State.CHECK, State.RECOGNIZE),
        (State.DONE, State.CONVERT),
        (State.DEAD, State.CONVERT),
        (State.FAILED, State.DONE),
    ],
)
def test_pipeline_cannot_skip_or_go_back(current: State, to: State) -> None:
    """Steps move forward one state at a time and never leave a terminal state."""
    with pytest.raises(InvalidTransition):
        transition(leased(current), to, now=LATER, error="x")


@pytest.mark.parametrize("current", sorted(TERMINAL_STATES | set(STEP_STATES)))
def test_owner_edit_clears_lease_delay_and_attempts(current: State) -> None:
    """An owner's state change clears acquisition, acquire time, delay and attempts."""
    job = transition(
        leased(current),
        State.CONVERT,
        now=LATER,
        actor=Actor.OWNER,
        delay_until=LATER + timedelta(hours=1),
    )
    assert job.state is State.CONVERT
    assert (job.acquisition_id, job.acquire_time, job.delay_time, job.attempts) == (
        None,
        None,
        None,
        0,
    )


def test_owner_revives_a_dead_job() -> None:
    """A dead job moved back to a step state by the owner is clean and eligible."""
    dead = transition(leased(attempts=6), State.DEAD, now=T0, error="gave up")
    revived = transition(dead, State.RECOGNIZE, now=LATER, actor=Actor.OWNER)
    assert revived.state is State.RECOGNIZE
    assert revived.error is None
    assert revived.attempts == 0


def test_transition_refuses_to_be_bypassed_for_owned_fields() -> None:
    """Lease, attempts, delay and state can only be set by the function's own rules."""
    with pytest.raises(TypeError, match="attempts"):
        transition(leased(), State.RECOGNIZE, now=LATER, attempts=9)


def test_transition_leaves_the_input_untouched() -> None:
    """Jobs are values: a transition returns a new one."""
    before = leased()
    snapshot = attrs.asdict(before)
    transition(before, State.RECOGNIZE, now=LATER)
    assert attrs.asdict(before) == snapshot


def test_delay_of_is_the_pause_the_transition_set() -> None:
    """The duration a step chose comes back exactly, whatever the clock that stamped it."""
    later = T0 + timedelta(minutes=5, microseconds=7)
    retry = transition(
        leased(), State.CONVERT, now=later, error="x", delay_until=later + timedelta(seconds=4)
    )
    assert delay_of(retry) == timedelta(seconds=4)


def test_delay_of_a_job_without_delay_is_none() -> None:
    """A finished step sets no delay: the store writes none and the next step is woken."""
    assert delay_of(transition(leased(), State.RECOGNIZE, now=T0)) is None
