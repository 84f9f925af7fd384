"""What both SQL dialects' outbox and poller share: the ``DUE`` row and reading the answer."""

from __future__ import annotations

from collections.abc import Iterable

from transcriber_adapters.sql.rows import RowMapping
from transcriber_core.ports import Ready

#: The row each dialect's ``DELIVERY_DUE_ROW`` adds to the ready states; never a state's name.
DUE = "outbox"


def ready_of(names: Iterable[str]) -> Ready:
    """The poller's answer from the names its one query returned: step states, then ``DUE``."""
    rows = list(names)
    states = frozenset(RowMapping.state_of(name) for name in rows if name != DUE)
    return Ready(states=states, delivery_due=DUE in rows)
