"""The daily quota's refusal as HTTP says it: 429 ``quota_exceeded``, ``Retry-After`` (ADR 59)."""

from __future__ import annotations

import math
from datetime import UTC, datetime

from transcriber_app.web.errors import ApiError
from transcriber_core.errors import QuotaExceeded

#: The stable code of a refusal by the daily quota, on ``/api``, ``/v1`` and the pages.
QUOTA_EXCEEDED = "quota_exceeded"


def reset_text(resets: datetime) -> str:
    """When a quota resets, as people and programs both read it: ``2026-07-15 00:00 UTC``."""
    return resets.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC")


def quota_message(exc: QuotaExceeded) -> str:
    """The words of a refusal: what is left today, and when the day starts again."""
    when = reset_text(exc.resets)
    if exc.left <= 0:
        return f"Today's quota of recording time is used up; it resets at {when}."
    if not exc.exact:
        return (
            f"This recording may be longer than the {math.floor(exc.left)} s left of today's"
            f" quota (it was not counted to its end); it resets at {when}."
        )
    return (
        f"This recording ({math.ceil(exc.incoming)} s) is longer than the"
        f" {math.floor(exc.left)} s left of today's quota; it resets at {when}."
    )


def quota_refused(exc: QuotaExceeded, *, now: datetime) -> ApiError:
    """The 429 answer to ``exc``: its code, words, reset time and ``Retry-After`` in seconds."""
    wait = max(math.ceil((exc.resets - now).total_seconds()), 1)
    return ApiError(
        429,
        QUOTA_EXCEEDED,
        quota_message(exc),
        headers={"Retry-After": str(wait)},
        resets=exc.resets,
    )
