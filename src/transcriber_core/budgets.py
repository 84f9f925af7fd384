"""Request budgets shared by every process: the token-bucket arithmetic (ADR 29).

A budget of ``capacity`` requests per ``per`` is a token bucket that holds
at most ``burst`` tokens and refills at ``(capacity - burst) / per``: however
the requests fall, no window of length ``per`` holds more than ``capacity``
of them. The stores (``BudgetStore`` adapters) keep one bucket per name and
call ``take_token`` (or ``take_turn``) inside their own transaction; this
module only counts.

**Turns (ADR 61).** A taker that names itself (a ``holder``: the recording or
part that waits) and finds the bucket empty is not only told to wait: the
next token is promised to it. The bucket goes into debt by one token (its
``tokens`` below zero), the holder's turn is stored with the bucket, and the
holder is admitted at its turn without taking again; a later taker, named or
not, waits behind every promised token. So N recordings waiting on a spent
budget ask it about once each and start one refill apart, instead of all
asking again at every refill and all but one being sent back. A promise
whose holder never comes back is a token not used: the budget is
under-spent, never over-spent.
"""

from __future__ import annotations

import math
from datetime import datetime, timedelta

import attrs


@attrs.frozen(kw_only=True)
class Bucket:
    """A budget's stored state: tokens left at ``updated``."""

    #: Tokens at ``updated``; below zero while tokens are promised to turns not yet due.
    tokens: float
    updated: datetime


@attrs.frozen(kw_only=True)
class Turn:
    """What a named take decided: the bucket to store, the wait, and the holder's turn."""

    bucket: Bucket
    #: None: admitted now; else how long until ``due``.
    wait: timedelta | None
    #: The moment the holder's promised token is due; None: it holds no promise (any more).
    due: datetime | None


def burst_of(capacity: int) -> int:
    """Requests that may go back to back: a tenth of the budget, at least 1, below ``capacity``."""
    if capacity < 1:
        raise ValueError("a budget's capacity must be at least 1")
    if capacity == 1:
        return 1
    return min(max(1, capacity // 10), capacity - 1)


def _rate(capacity: int, per: timedelta) -> float:
    """Tokens per second coming back."""
    seconds = per.total_seconds()
    if seconds <= 0:
        raise ValueError("a budget's period must be positive")
    # A budget of 1 cannot keep a burst below its capacity: one token per period.
    return max(capacity - burst_of(capacity), 1) / seconds


def take_token(
    bucket: Bucket | None, *, capacity: int, per: timedelta, now: datetime
) -> tuple[Bucket, timedelta | None]:
    """The bucket after trying to take one token at ``now``, and None (taken) or the wait.

    A missing bucket starts full. A ``now`` before the stored time (another
    host's clock behind ours) refills nothing rather than going back.
    """
    burst = burst_of(capacity)
    rate = _rate(capacity, per)
    if bucket is None:
        tokens, last = float(burst), now
    else:
        elapsed = max((now - bucket.updated).total_seconds(), 0.0)
        tokens, last = min(float(burst), bucket.tokens + elapsed * rate), max(now, bucket.updated)
    if tokens >= 1.0:
        return Bucket(tokens=tokens - 1.0, updated=last), None
    return Bucket(tokens=tokens, updated=last), _until_one(tokens, rate)


def _until_one(tokens: float, rate: float) -> timedelta:
    """How long a bucket holding ``tokens`` takes to hold one, rounded up to the millisecond."""
    # Rounded up so the wait is never a hair too short.
    return timedelta(seconds=math.ceil((1.0 - tokens) / rate * 1000) / 1000)


def take_turn(
    bucket: Bucket | None,
    due: datetime | None,
    *,
    capacity: int,
    per: timedelta,
    now: datetime,
) -> Turn:
    """A named take at ``now`` by a holder whose stored turn is ``due`` (None: it has none).

    A holder whose turn has come is admitted on its promised token, taking
    nothing more; one whose turn is still ahead is told the rest of the wait
    and promised nothing new. Otherwise a token is taken if one is there
    (not one promised to a turn: those are already out of ``tokens``), or
    the next one is promised: the bucket goes one token into debt and the
    turn is when the debt is paid back.
    """
    if due is not None and bucket is not None:
        if due <= now:
            return Turn(bucket=bucket, wait=None, due=None)
        return Turn(bucket=bucket, wait=_rounded(due - now), due=due)
    after, wait = take_token(bucket, capacity=capacity, per=per, now=now)
    if wait is None:
        return Turn(bucket=after, wait=None, due=None)
    promised = Bucket(tokens=after.tokens - 1.0, updated=after.updated)
    return Turn(bucket=promised, wait=wait, due=after.updated + wait)


def _rounded(wait: timedelta) -> timedelta:
    """``wait`` rounded up to the millisecond, as every wait told."""
    return timedelta(seconds=math.ceil(wait.total_seconds() * 1000) / 1000)


def level(bucket: Bucket | None, *, capacity: int, per: timedelta, now: datetime) -> float:
    """Tokens a budget holds at ``now``: what ``/metrics`` shows; below zero, tokens promised."""
    burst = burst_of(capacity)
    if bucket is None:
        return float(burst)
    elapsed = max((now - bucket.updated).total_seconds(), 0.0)
    return min(float(burst), bucket.tokens + elapsed * _rate(capacity, per))


def turns_forgotten_before(now: datetime, per: timedelta) -> datetime:
    """Turns due before this moment are dropped: their holders did not come back for a period."""
    return now - per
