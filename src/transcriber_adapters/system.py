"""The real clock, the real random id source, and what the host says about itself."""

from __future__ import annotations

import os
import secrets
import socket
from datetime import UTC, datetime
from pathlib import Path

from transcriber_adapters.localdisk import storage_errors


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


def free_bytes(path: Path) -> int:
    """Bytes an unprivileged writer may still use on the filesystem holding ``path``.

    One ``statvfs``: cheap enough for every upload and every health probe.
    ``f_bavail``, not ``f_bfree``: the blocks reserved for root are not ours.
    """
    with storage_errors():
        stats = os.statvfs(path)
    return stats.f_bavail * stats.f_frsize


def host_name() -> str:
    """This host's name: where a condition about its own disk holds."""
    return socket.gethostname()
