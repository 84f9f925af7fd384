"""The stores' clock on PostgreSQL: the database's own, unless a test injects one (ADR 32).

Leases, budgets and conditions are judged on one clock shared by every
host: the database server's. Each statement that needs "now" says
``NOW_SQL``, bound with ``now_param(clock)``: NULL (the server's
``statement_timestamp()``) in service, or the instant of a ``Clock`` a test
controls, so the contract suites keep fixing time on PostgreSQL too.
"""

from __future__ import annotations

from datetime import datetime

from transcriber_core.ports import Clock

#: "Now" in a statement: the injected clock's instant, else the database's. Named parameter
#: ``now``; ``statement_timestamp()`` is one instant for the whole statement.
NOW_SQL = "coalesce(%(now)s::timestamptz, statement_timestamp())"


def now_param(clock: Clock | None) -> datetime | None:
    """The value to bind as ``now``: None lets the database read its own clock."""
    return None if clock is None else clock.now()
