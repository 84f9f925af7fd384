"""Service conditions in a dict: the condition store of one process, for demos and tests."""

from __future__ import annotations

from datetime import datetime

import attrs

from transcriber_core.entities import Condition


class MemoryConditionStore:
    """Conditions keyed by code and scope; ``reports`` records every ``report`` call."""

    def __init__(self) -> None:
        self._held: dict[tuple[str, str], Condition] = {}
        #: Every report, oldest first: (code, scope).
        self.reports: list[tuple[str, str]] = []

    def reset(self) -> None:
        """Forget every condition and report."""
        self._held.clear()
        self.reports.clear()

    async def report(self, code: str, *, scope: str, message: str, now: datetime) -> None:
        """Note that ``code`` holds in ``scope``; the first sighting's ``since`` is kept."""
        self.reports.append((code, scope))
        known = self._held.get((code, scope))
        since = now if known is None else known.since
        self._held[code, scope] = Condition(
            code=code, scope=scope, message=message, since=since, seen=now
        )

    async def clear(self, codes: frozenset[str], *, scopes: frozenset[str]) -> None:
        """Forget ``codes`` in each of ``scopes``."""
        for key in [key for key in self._held if key[0] in codes and key[1] in scopes]:
            del self._held[key]

    async def current(self, *, scopes: frozenset[str], seen_after: datetime) -> list[Condition]:
        """Conditions in ``scopes`` seen after ``seen_after``, by code then scope."""
        found = [
            attrs.evolve(condition)
            for (_, scope), condition in self._held.items()
            if scope in scopes and condition.seen > seen_after
        ]
        return sorted(found, key=lambda condition: (condition.code, condition.scope))
