"""The real clock and the real random id source."""

from __future__ import annotations

import secrets
from datetime import UTC, datetime


class SystemClock:
    """Wall-clock time in UTC."""

    def now(self) -> datetime:
        """The current time, timezone-aware UTC."""
        return datetime.now(UTC)


class RandomIds:
    """128 random bits from the OS, URL-safe base64 without padding (22 characters)."""

    def new_id(self) -> str:
        """A fresh unguessable id."""
        return secrets.token_urlsafe(16)
