"""What ``/health`` and the intakes know about the service's own faults (reference: Limits).

Two sources: the condition store, where workers of every process note what
they ran into (a full disk on their host, keys refused everywhere), and one
``statvfs`` of the data dir, which sees a full disk even when the database
on it can no longer take the note.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

import attrs

from transcriber_core.entities import EVERYWHERE, Condition
from transcriber_core.errors import DiskFull
from transcriber_core.services import Services

log = logging.getLogger("transcriber.conditions")

#: What a full data dir says, for the log and the admin page.
LOW_SPACE = "free space in the data dir is below [storage] min_free_bytes"


@attrs.frozen(kw_only=True)
class DiskSpace:
    """The data dir's free space against ``[storage] min_free_bytes``.

    ``free_bytes`` measures a path (the composition root hands in the
    system's ``statvfs``), so nothing here reaches an adapter itself.
    """

    data_dir: Path
    min_free_bytes: int
    free_bytes: Callable[[Path], int]

    def is_short(self) -> bool:
        """True while the data dir has less free space than ``min_free_bytes``.

        A data dir that cannot even be measured counts as short: accepting a
        recording there would fail anyway.
        """
        try:
            free = self.free_bytes(self.data_dir)
        except Exception as exc:  # noqa: BLE001 - unmeasurable is as bad as full
            log.warning("conditions.statvfs_error", extra={"error_type": type(exc).__name__})
            return True
        return free < self.min_free_bytes


async def current_conditions(services: Services, space: DiskSpace) -> list[Condition]:
    """The faults that hold for this process now: its host's and the deployment's, by code.

    Raises when the condition store cannot be read; the caller reports that
    as the database being unavailable.
    """
    now = services.clock.now()
    held: list[Condition] = []
    if services.conditions is not None:
        held = await services.conditions.current(
            scopes=frozenset({services.host, EVERYWHERE}),
            within=services.settings.condition_max_age,
        )
    if space.is_short() and all(c.code != DiskFull.code for c in held):
        held.append(
            Condition(
                code=DiskFull.code, scope=services.host, message=LOW_SPACE, since=now, seen=now
            )
        )
        held.sort(key=lambda condition: (condition.code, condition.scope))
    return held
