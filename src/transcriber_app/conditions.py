"""What ``/health`` and the intakes know about the service's own faults (reference: Limits).

Two sources: the condition store, where workers of every process note what
they ran into (a full disk on their host, keys refused everywhere), and one
``statvfs`` of the data dir, which sees a full disk even when the database
on it can no longer take the note.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from transcriber_adapters.system import free_bytes
from transcriber_core.entities import EVERYWHERE, Condition
from transcriber_core.errors import DiskFull

if TYPE_CHECKING:
    from transcriber_app.bootstrap import Runtime
    from transcriber_app.config import StorageConfig

log = logging.getLogger("transcriber.conditions")

#: What a full data dir says, for the log and the admin page.
LOW_SPACE = "free space in the data dir is below [storage] min_free_bytes"


def short_of_space(runtime: Runtime) -> bool:
    """True while the data dir has less free space than ``[storage] min_free_bytes``."""
    return storage_is_short(runtime.config.storage)


def storage_is_short(storage: StorageConfig) -> bool:
    """True while ``storage.data_dir`` has less free space than ``min_free_bytes``.

    A data dir that cannot even be measured counts as short: accepting a
    recording there would fail anyway.
    """
    try:
        free = free_bytes(storage.data_dir)
    except Exception as exc:  # noqa: BLE001 - unmeasurable is as bad as full
        log.warning("conditions.statvfs_error", extra={"error_type": type(exc).__name__})
        return True
    return free < storage.min_free_bytes


async def current_conditions(runtime: Runtime) -> list[Condition]:
    """The faults that hold for this process now: its host's and the deployment's, by code.

    Raises when the condition store cannot be read; the caller reports that
    as the database being unavailable.
    """
    services = runtime.services
    now = services.clock.now()
    held: list[Condition] = []
    if services.conditions is not None:
        held = await services.conditions.current(
            scopes=frozenset({services.host, EVERYWHERE}),
            within=services.settings.condition_max_age,
        )
    if short_of_space(runtime) and all(c.code != DiskFull.code for c in held):
        held.append(
            Condition(
                code=DiskFull.code, scope=services.host, message=LOW_SPACE, since=now, seen=now
            )
        )
        held.sort(key=lambda condition: (condition.code, condition.scope))
    return held
