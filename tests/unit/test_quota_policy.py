"""The daily quota's pure decision (SPEC §20, ADR 59): its edges, midnight UTC, no quota."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from transcriber_core.policy import (
    Settings,
    charge_decision,
    charged_seconds,
    measure_bound,
    quota_decision,
)
from transcriber_core.usage import Charge, Measured, next_utc_midnight, telegram_payer, utc_day

NOON = datetime(2026, 7, 14, 12, 0, tzinfo=UTC)
MIDNIGHT = datetime(2026, 7, 15, tzinfo=UTC)


def test_no_quota_allows_anything() -> None:
    """A limit of 0 is no quota: any usage is allowed, and nothing resets."""
    decision = quota_decision(now=NOON, used=10**9, incoming=10**6, limit=0)
    assert decision.allowed
    assert decision.resets is None


def test_a_recording_ending_exactly_at_the_limit_is_taken() -> None:
    """Used plus the recording equal to the limit is allowed."""
    decision = quota_decision(now=NOON, used=3000, incoming=600, limit=3600)
    assert decision.allowed
    assert decision.left == 600


def test_one_second_over_is_refused_until_midnight_utc() -> None:
    """One second past the limit is refused; the refusal lasts until the next UTC midnight."""
    decision = quota_decision(now=NOON, used=3000, incoming=601, limit=3600)
    assert not decision.allowed
    assert decision.resets == MIDNIGHT
    assert decision.left == 600


def test_a_spent_day_refuses_even_an_unknown_length() -> None:
    """At the limit, a recording whose header says nothing (0 s) is refused too."""
    assert not quota_decision(now=NOON, used=3600, incoming=0, limit=3600).allowed
    assert quota_decision(now=NOON, used=3599, incoming=0, limit=3600).allowed


def test_over_the_limit_already_is_refused() -> None:
    """Usage past the limit (a measured length longer than declared) refuses; none left."""
    decision = quota_decision(now=NOON, used=4000, incoming=1, limit=3600)
    assert not decision.allowed
    assert decision.left == 0


def test_the_reset_is_the_next_utc_midnight_across_the_boundary() -> None:
    """Just before midnight UTC the reset is moments away; at midnight it is a day away."""
    just_before = MIDNIGHT - timedelta(microseconds=1)
    assert quota_decision(now=just_before, used=3600, incoming=0, limit=3600).resets == MIDNIGHT
    at = quota_decision(now=MIDNIGHT, used=0, incoming=0, limit=3600)
    assert at.resets == MIDNIGHT + timedelta(days=1)
    assert utc_day(just_before) != utc_day(MIDNIGHT)


def test_the_day_is_utc_whatever_the_zone_of_now() -> None:
    """A ``now`` in another zone falls on its UTC day; the reset is UTC midnight."""
    moscow = timezone(timedelta(hours=3))
    late = datetime(2026, 7, 15, 1, 30, tzinfo=moscow)  # 22:30 UTC on the 14th
    assert utc_day(late) == datetime(2026, 7, 14, tzinfo=UTC).date()
    assert next_utc_midnight(late) == MIDNIGHT


def test_a_negative_limit_or_charge_is_refused() -> None:
    """A negative quota or charge is a programming error, not a decision."""
    with pytest.raises(ValueError, match="quota"):
        quota_decision(now=NOON, used=0, incoming=0, limit=-1)
    with pytest.raises(ValueError, match="seconds_per_day"):
        Settings(seconds_per_day=-1)
    with pytest.raises(ValueError, match="seconds"):
        Charge(job_id="j", payer="p", seconds=-1)


def test_a_telegram_payer_names_the_user() -> None:
    """A Telegram sender with no person linked pays as ``telegram:<user id>``."""
    assert telegram_payer(42) == "telegram:42"


def test_a_job_charged_before_passes_a_spent_day_and_a_new_one_does_not() -> None:
    """A retried job is taken on a spent day (it counts once); a new one of its length is not."""
    again = charge_decision(now=NOON, used=3600, incoming=600, limit=3600, charged_before=True)
    assert again.allowed
    assert again.used == 3600
    assert again.resets == MIDNIGHT
    new = charge_decision(now=NOON, used=3600, incoming=600, limit=3600, charged_before=False)
    assert not new.allowed


def test_a_measured_recording_is_charged_what_it_decodes_to() -> None:
    """Counted to its end: its length; past the quota: the count; cut by the ceiling: its most."""
    whole = Measured(counted=50.0, whole=True, most=4000.0)
    assert charged_seconds(whole, declared=1.0, limit=60) == 50.0
    longer = Measured(counted=measure_bound(60), whole=False, most=4000.0)
    assert charged_seconds(longer, declared=None, limit=60) == 61.0
    cut = Measured(counted=12.0, whole=False, most=4000.0)
    assert charged_seconds(cut, declared=None, limit=60) == 4000.0
    # Not measured: the header's claim, else nothing until the convert step measures it.
    assert charged_seconds(None, declared=7.5, limit=60) == 7.5
    assert charged_seconds(None, declared=None, limit=60) == 0.0
