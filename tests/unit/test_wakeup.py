"""In-process wake-ups of idle workers (reference: queue rule 10)."""

from __future__ import annotations

import asyncio

from transcriber_core.entities import State
from transcriber_core.wakeup import Wakeup


async def test_notify_wakes_a_waiter_on_that_state() -> None:
    """A worker waiting on convert wakes when convert is notified."""
    wakeup = Wakeup()
    token = wakeup.token(State.CONVERT)
    waiter = asyncio.create_task(token.wait())
    wakeup.notify(State.CONVERT)
    async with asyncio.timeout(5):
        assert await waiter is True


def test_notify_between_token_and_wait_is_not_lost() -> None:
    """A wake-up landing after the token is taken but before waiting still wakes."""
    wakeup = Wakeup()
    token = wakeup.token(State.CHECK)
    wakeup.notify(State.CHECK)
    assert token.is_set()


def test_other_states_do_not_wake() -> None:
    """Notifying recognize leaves a convert waiter asleep."""
    wakeup = Wakeup()
    token = wakeup.token(State.CONVERT)
    wakeup.notify(State.RECOGNIZE)
    assert not token.is_set()


def test_a_new_token_waits_for_the_next_notify() -> None:
    """After a wake-up, a freshly taken token does not fire for the old notify."""
    wakeup = Wakeup()
    wakeup.notify(State.CONVERT)
    token = wakeup.token(State.CONVERT)
    assert not token.is_set()


async def test_every_waiter_wakes() -> None:
    """Several idle workers of one state all wake on one notify."""
    wakeup = Wakeup()
    token = wakeup.token(State.CONVERT)
    waiters = [asyncio.create_task(token.wait()) for _ in range(4)]
    wakeup.notify(State.CONVERT)
    async with asyncio.timeout(5):
        assert await asyncio.gather(*waiters) == [True] * 4


def test_terminal_states_are_ignored() -> None:
    """Notifying a state no worker serves is harmless."""
    Wakeup().notify(State.DONE)


def test_a_jobs_change_wakes_its_waiters_only() -> None:
    """job_changed(id) sets that job's token and no other's."""
    wakeup = Wakeup()
    mine = wakeup.job_token("job-a")
    other = wakeup.job_token("job-b")
    assert wakeup.job_token("job-a") is mine
    wakeup.job_changed("job-a")
    assert mine.is_set()
    assert not other.is_set()
    assert not wakeup.job_token("job-a").is_set()


def test_an_empty_id_wakes_every_job_waiter() -> None:
    """job_changed("") (after a lost feed) wakes the waiters of every job."""
    wakeup = Wakeup()
    tokens = [wakeup.job_token(job_id) for job_id in ("a", "b", "c")]
    wakeup.job_changed("")
    assert all(token.is_set() for token in tokens)


def test_a_token_nobody_holds_is_forgotten() -> None:
    """Job tokens are held weakly: a waiter that went away leaves nothing behind."""
    wakeup = Wakeup()
    token = wakeup.job_token("gone")
    assert len(wakeup._jobs) == 1
    del token
    assert len(wakeup._jobs) == 0
