"""What both SQL dialects' outbox and poller share: the ``DUE`` and ``PARTS`` rows, the answer."""

from __future__ import annotations

from collections.abc import Iterable

from transcriber_adapters.sql.rows import RowMapping
from transcriber_core.ports import Ready

#: The row each dialect's ``DELIVERY_DUE_ROW`` adds to the ready states; never a state's name.
DUE = "outbox"
#: The row each dialect's ``PARTS_DUE_ROW`` adds when a part may be taken (ADR 52).
PARTS = "parts"


def ready_of(names: Iterable[str]) -> Ready:
    """The poller's answer from its one query's names: step states, ``DUE``, ``PARTS``."""
    rows = list(names)
    states = frozenset(RowMapping.state_of(name) for name in rows if name not in (DUE, PARTS))
    return Ready(states=states, delivery_due=DUE in rows, parts_due=PARTS in rows)
