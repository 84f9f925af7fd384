"""Service conditions in a dict: the condition store of one process, for demos and tests."""

from __future__ import annotations

from datetime import timedelta

from transcriber_adapters.memory.database import MemoryDatabase, database_for
from transcriber_core.entities import Condition
from transcriber_core.ports import Clock


class MemoryConditionStore:
    """Conditions keyed by code and scope; ``reports`` records every ``report`` call.

    Time is the database's clock; stores on one ``database`` share their conditions.
    """

    def __init__(
        self, clock: Clock | None = None, *, database: MemoryDatabase | None = None
    ) -> None:
        self._db = database_for(clock, database)
        #: Every report, oldest first: (code, scope).
        self.reports: list[tuple[str, str]] = []

    @property
    def database(self) -> MemoryDatabase:
        """The data this store works on; give it to another store to share it."""
        return self._db

    def reset(self) -> None:
        """Forget every condition and report."""
        with self._db.lock:
            self._db.conditions.clear()
            self.reports.clear()

    async def report(self, code: str, *, scope: str, message: str) -> None:
        """Note that ``code`` holds in ``scope`` now; the first sighting's ``since`` is kept."""
        with self._db.lock:
            self.reports.append((code, scope))
            now = self._db.clock.now()
            known = self._db.conditions.get((code, scope))
            since = now if known is None else known.since
            self._db.conditions[code, scope] = Condition(
                code=code, scope=scope, message=message, since=since, seen=now
            )

    async def clear(self, codes: frozenset[str], *, scopes: frozenset[str]) -> None:
        """Forget ``codes`` in each of ``scopes``."""
        with self._db.lock:
            held = self._db.conditions
            for key in [key for key in held if key[0] in codes and key[1] in scopes]:
                del held[key]

    async def current(self, *, scopes: frozenset[str], within: timedelta) -> list[Condition]:
        """Conditions in ``scopes`` seen less than ``within`` ago, by code then scope."""
        with self._db.lock:
            cutoff = self._db.clock.now() - within
            found = [
                condition
                for (_, scope), condition in self._db.conditions.items()
                if scope in scopes and condition.seen > cutoff
            ]
        return sorted(found, key=lambda condition: (condition.code, condition.scope))
