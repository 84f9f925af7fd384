"""Retry, lease and check-delay policy (reference: Settings table, queue rule 7, acceptance 5)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from transcriber_core.entities import Delivery, DeliveryKind, Event, Job, Origin, State
from transcriber_core.policy import (
    DEFAULT_SETTINGS,
    Settings,
    delivery_limit,
    delivery_pause,
    files_go_at,
    first_check_delay,
    is_exhausted,
    job_goes_at,
    next_check_delay,
    reachable_by,
    reconnect_pause,
    retry_pause,
)


def test_settings_table_numbers() -> None:
    """The defaults are the numbers the settings table promises."""
    s = DEFAULT_SETTINGS
    assert s.max_attempts == 5
    assert s.lease == timedelta(minutes=2)
    assert s.lease_renewal == timedelta(seconds=30)
    assert s.ceiling(State.CONVERT) == timedelta(hours=8)
    assert s.ceiling(State.RECOGNIZE) == timedelta(hours=2)
    assert s.ceiling(State.CHECK) == timedelta(hours=1)
    assert s.first_check_delay == timedelta(seconds=10)
    assert s.check_interval == timedelta(seconds=5)
    assert s.max_record_bytes == 8 * 1024**3
    assert s.upload_inactivity_timeout == timedelta(minutes=5)
    assert s.idle_poll_interval == timedelta(seconds=1)


def test_second_retry_pause_is_longer_than_the_first() -> None:
    """Acceptance 5: the pause grows between the first and second retry."""
    assert retry_pause(2) > retry_pause(1)


@pytest.mark.parametrize(
    ("attempts", "seconds"), [(1, 1), (2, 2), (3, 4), (4, 8), (9, 256), (10, 300), (50, 300)]
)
def test_retry_pause_doubles_up_to_the_cap(attempts: int, seconds: int) -> None:
    """The pause is 2^(attempt-1) seconds, never more than five minutes."""
    assert retry_pause(attempts) == timedelta(seconds=seconds)


def test_retry_pause_of_huge_attempt_count_is_the_cap() -> None:
    """An absurd attempt count neither overflows nor exceeds the cap."""
    assert retry_pause(10**9) == timedelta(minutes=5)


def test_retry_pause_of_zero_attempts_is_the_base() -> None:
    """A job edited to zero attempts still gets a positive pause."""
    assert retry_pause(0) == timedelta(seconds=1)


def test_exhausted_only_past_the_limit() -> None:
    """The fifth acquire still runs; the sixth marks the job dead."""
    assert not is_exhausted(5)
    assert is_exhausted(6)


def test_check_delay_may_grow_never_shrink() -> None:
    """The recognizer may ask to wait longer between checks, never shorter."""
    assert next_check_delay(None) == timedelta(seconds=5)
    assert next_check_delay(timedelta(seconds=1)) == timedelta(seconds=5)
    assert next_check_delay(timedelta(seconds=30)) == timedelta(seconds=30)


def test_first_check_delay_follows_advice() -> None:
    """A recognizer's advice for the first check wins; without it the 10 s default holds."""
    assert first_check_delay(None) == timedelta(seconds=10)
    assert first_check_delay(timedelta(0)) == timedelta(0)


def test_settings_reject_renewal_not_shorter_than_lease() -> None:
    """A renewal interval as long as the lease would let leases lapse while a step runs."""
    with pytest.raises(ValueError, match="lease_renewal"):
        Settings(lease=timedelta(seconds=10), lease_renewal=timedelta(seconds=10))


def test_settings_reject_zero_attempts() -> None:
    """With zero attempts no job could ever run."""
    with pytest.raises(ValueError, match="max_attempts"):
        Settings(max_attempts=0)


def _delivery(attempts: int, age: timedelta) -> Delivery:
    """A webhook delivery leased for its ``attempts``-th try, ``age`` after it was written."""
    written = datetime(2026, 12, 1, 12, tzinfo=UTC)
    return Delivery(
        id=1,
        job_id="job",
        kind=DeliveryKind.WEBHOOK,
        event=Event.DONE,
        attempts=attempts,
        acquisition_id="lease",
        acquire_time=written + age,
        due=written,
        created=written,
    )


def test_delivery_pause_doubles_from_its_base_up_to_its_cap() -> None:
    """Without an ask from the receiver the wait doubles per try and stops at the cap."""
    settings = Settings(
        delivery_retry_base=timedelta(seconds=2), delivery_retry_cap=timedelta(seconds=5)
    )
    pauses = [
        delivery_pause(_delivery(attempt, timedelta(0)), None, settings)
        for attempt in (1, 2, 3, 60)
    ]
    assert pauses == [timedelta(seconds=s) for s in (2, 4, 5, 5)]


def test_delivery_pause_takes_the_receivers_ask_within_the_cap() -> None:
    """Telegram's retry_after replaces the doubling, but never past delivery_retry_cap."""
    fresh = _delivery(1, timedelta(0))
    assert delivery_pause(fresh, timedelta(seconds=7)) == timedelta(seconds=7)
    assert delivery_pause(fresh, timedelta(days=2)) == DEFAULT_SETTINGS.delivery_retry_cap
    second = _delivery(2, timedelta(0))
    assert delivery_pause(second, timedelta(0)) == 2 * DEFAULT_SETTINGS.delivery_retry_base


def test_a_delivery_is_given_up_once_its_window_passed() -> None:
    """A delivery written 24 h before this try is given up; one a moment younger is retried."""
    window = DEFAULT_SETTINGS.delivery_window
    assert window == timedelta(hours=24)
    assert delivery_pause(_delivery(150, window), None) is None
    younger = delivery_pause(_delivery(150, window - timedelta(microseconds=1)), None)
    assert younger == DEFAULT_SETTINGS.delivery_retry_cap


def test_one_delivery_try_stays_within_half_the_lease() -> None:
    """A try longer than its lease could be taken and sent again by a second loop mid-send."""
    assert delivery_limit() == timedelta(seconds=60)
    short = Settings(lease=timedelta(seconds=30), lease_renewal=timedelta(seconds=5))
    assert delivery_limit(short) == timedelta(seconds=15)


def _ended_job(state: State, ended: datetime | None, owner: str | None = None) -> Job:
    moment = datetime(2026, 5, 1, tzinfo=UTC)
    return Job(
        id="j",
        state=state,
        origin=Origin.http(),
        owner=owner,
        ended=ended,
        created=moment,
        updated=moment,
    )


def test_files_and_job_go_their_days_after_the_end() -> None:
    """Retention dates count from ``ended``; a running job has none."""
    ended = datetime(2026, 5, 2, tzinfo=UTC)
    settings = Settings(recordings_kept=timedelta(days=7), jobs_kept=timedelta(days=30))
    job = _ended_job(State.DONE, ended)
    assert files_go_at(job, settings) == ended + timedelta(days=7)
    assert job_goes_at(job, settings) == ended + timedelta(days=30)
    running = _ended_job(State.CHECK, None)
    assert files_go_at(running, settings) is None
    assert job_goes_at(running, settings) is None


def test_retention_settings_are_checked() -> None:
    """Jobs are kept no shorter than their files; nothing is kept for zero time."""
    with pytest.raises(ValueError, match="jobs_kept"):
        Settings(recordings_kept=timedelta(days=8), jobs_kept=timedelta(days=7))
    with pytest.raises(ValueError, match="recordings_kept"):
        Settings(recordings_kept=timedelta(0))
    with pytest.raises(ValueError, match="sweep_batch"):
        Settings(sweep_batch=0)


def test_a_job_is_reachable_only_by_the_token_that_sent_it() -> None:
    """With tokens the owner's hash must match; a job without owner is reachable by none."""
    mine = _ended_job(State.DONE, None, owner="a" * 64)
    telegram = _ended_job(State.DONE, None)
    assert reachable_by(mine, "a" * 64)
    assert not reachable_by(mine, "b" * 64)
    assert not reachable_by(telegram, "a" * 64)
    assert reachable_by(mine, None)
    assert reachable_by(telegram, None)


def test_a_persons_job_is_reachable_by_that_person_alone() -> None:
    """A person's job answers their key alone: not another's, a static token's or the open API."""
    key = "person:" + "a" * 57
    theirs = _ended_job(State.DONE, None, owner=key)
    assert reachable_by(theirs, key)
    assert not reachable_by(theirs, "person:" + "b" * 57)
    assert not reachable_by(theirs, "a" * 64)
    assert not reachable_by(theirs, None)


def test_reconnect_pause_starts_at_once_then_doubles_to_its_cap() -> None:
    """The first connection is tried at once; each failed try in a row doubles the wait to 5 s."""
    pauses = [reconnect_pause(failures) for failures in range(8)]
    assert pauses[:4] == [
        timedelta(0),
        timedelta(milliseconds=100),
        timedelta(milliseconds=200),
        timedelta(milliseconds=400),
    ]
    assert pauses[-1] == timedelta(seconds=5)
    assert reconnect_pause(10**6) == timedelta(seconds=5)
    assert reconnect_pause(-1) == timedelta(0)
