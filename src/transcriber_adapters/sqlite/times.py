"""The one time representation of the SQLite adapter: INTEGER microseconds since the Unix epoch.

Every time column, and every time bound into a query (``now``, the lease
cutoff), goes through ``to_db`` and comes back through ``from_db``; nothing
else in the adapter converts a time, and SQLite's own date functions are
never used (reference: queue rule 8, ADR 3). Integers compare exactly, index cheaply and
keep the order of jobs created in the same millisecond.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND = timedelta(microseconds=1)


def to_db(moment: datetime) -> int:
    """Microseconds since the Unix epoch of a timezone-aware ``moment``; naive times are refused."""
    if moment.tzinfo is None or moment.utcoffset() is None:
        raise ValueError("a stored time must be timezone-aware")
    return (moment - _EPOCH) // _MICROSECOND


def from_db(value: int) -> datetime:
    """The UTC datetime of a stored microsecond count."""
    return _EPOCH + timedelta(microseconds=value)
