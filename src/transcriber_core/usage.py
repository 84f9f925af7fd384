"""Seconds transcribed, counted per payer per UTC day, and what a quota decides (SPEC §20, ADR 59).

A *payer* is whose quota a recording counts against: a person's owner key
(``person:<id>``), a static token's digest, or ``telegram:<user id>`` for
a Telegram sender no person is linked to. Each accepted recording is one
``Charge`` keyed by its job's id: charged at intake with the duration it
decodes to (``Measured``, ADR 67; so a burst of uploads cannot overrun the
day while the first is still queued), then set to the duration the
convert step measured. Both writes are keyed by the job, so a retried step, a part or a
replayed upload never counts it twice.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, time, timedelta

import attrs

#: What starts the payer of a Telegram sender that no person is linked to.
TELEGRAM_PAYER_PREFIX = "telegram:"


def telegram_payer(user_id: int) -> str:
    """The payer of a Telegram sender no person is linked to: their Telegram user id."""
    return f"{TELEGRAM_PAYER_PREFIX}{user_id}"


def utc_day(at: datetime) -> date:
    """The UTC day ``at`` falls on: the day a charge made then counts for."""
    return at.astimezone(UTC).date()


def next_utc_midnight(now: datetime) -> datetime:
    """When the day of ``now`` ends in UTC: a spent daily quota is whole again from then."""
    return datetime.combine(utc_day(now) + timedelta(days=1), time(0), tzinfo=UTC)


def month_start(day: date) -> date:
    """The first day of ``day``'s month: where the month's total starts counting."""
    return day.replace(day=1)


@attrs.frozen(kw_only=True)
class Charge:
    """One recording counted against a payer: whose, which job, how many seconds."""

    #: The job the seconds are for; a second charge of the same job counts nothing.
    job_id: str
    #: Whose quota it counts against (module docstring).
    payer: str
    #: Seconds of audio; 0 while the length is unknown (the convert step sets it).
    seconds: float = attrs.field(validator=attrs.validators.ge(0.0))


@attrs.frozen(kw_only=True)
class Usage:
    """A payer's seconds on one UTC day and in that day's month so far."""

    #: The UTC day the figures are for (the store's today).
    day: date
    #: Seconds counted on ``day``.
    today: float = 0.0
    #: Seconds counted from the first of ``day``'s month through ``day``.
    month: float = 0.0


@attrs.frozen(kw_only=True)
class Measured:
    """How long a staged recording decodes to, counted at intake for its charge (ADR 67)."""

    #: Seconds of audio decoded and counted (samples over rate), from the start.
    counted: float = attrs.field(validator=attrs.validators.ge(0.0))
    #: True when decoding reached the recording's end: ``counted`` is its length.
    whole: bool
    #: Most seconds the file may decode to at all (its size and the decoded-size limits, §17).
    most: float = attrs.field(validator=attrs.validators.ge(0.0))
