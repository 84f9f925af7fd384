"""Request budgets shared by every process: the token-bucket arithmetic (ADR 29).

A budget of ``capacity`` requests per ``per`` is a token bucket that holds
at most ``burst`` tokens and refills at ``(capacity - burst) / per``: however
the requests fall, no window of length ``per`` holds more than ``capacity``
of them. The stores (``BudgetStore`` adapters) keep one bucket per name and
call ``take_token`` inside their own transaction; this module only counts.
"""

from __future__ import annotations

import math
from datetime import datetime, timedelta

import attrs


@attrs.frozen(kw_only=True)
class Bucket:
    """A budget's stored state: tokens left at ``updated``."""

    tokens: float
    updated: datetime


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
    # Round up to the millisecond so the wait is never a hair too short.
    wait = math.ceil((1.0 - tokens) / rate * 1000) / 1000
    return Bucket(tokens=tokens, updated=last), timedelta(seconds=wait)


def level(bucket: Bucket | None, *, capacity: int, per: timedelta, now: datetime) -> float:
    """Tokens a budget holds at ``now``: what ``/metrics`` shows."""
    burst = burst_of(capacity)
    if bucket is None:
        return float(burst)
    elapsed = max((now - bucket.updated).total_seconds(), 0.0)
    return min(float(burst), bucket.tokens + elapsed * _rate(capacity, per))
