"""``PostgresConditionStore``: the service's own faults, seen by every process on the database.

Times are the store's clock (``clock.NOW_SQL``): the database's, so a
condition one host reports ages out on the same clock another host reads.
"""

from __future__ import annotations

from datetime import timedelta

from transcriber_adapters.postgres.clock import NOW_SQL, now_param
from transcriber_adapters.postgres.connection import Database
from transcriber_core.entities import Condition
from transcriber_core.ports import Clock

#: Insert a condition, or move its ``seen`` (and message) while keeping ``since``.
_REPORT = (
    "INSERT INTO service_conditions (code, scope, message, since, seen)"
    f" VALUES (%(code)s, %(scope)s, %(message)s, {NOW_SQL}, {NOW_SQL})"
    " ON CONFLICT (code, scope) DO UPDATE SET message = excluded.message, seen = excluded.seen"
)
# A DELETE that matches nothing (the usual case after a step) locks nothing.
_CLEAR = "DELETE FROM service_conditions WHERE code = ANY(%(codes)s) AND scope = ANY(%(scopes)s)"
_CURRENT = (
    "SELECT code, scope, message, since, seen FROM service_conditions"
    f" WHERE scope = ANY(%(scopes)s) AND seen > {NOW_SQL} - %(within)s"
    " ORDER BY code, scope"
)


class PostgresConditionStore:
    """Conditions in the ``service_conditions`` table of a shared ``Database``."""

    def __init__(self, database: Database, *, clock: Clock | None = None) -> None:
        """Use ``database``'s pool; times from ``clock`` when given, else the database's own."""
        self._db = database
        self._clock = clock

    async def report(self, code: str, *, scope: str, message: str) -> None:
        """Note that ``code`` holds in ``scope`` now; the first ``since`` is kept."""
        params = {"code": code, "scope": scope, "message": message, "now": now_param(self._clock)}
        await self._db.execute(_REPORT, params)

    async def clear(self, codes: frozenset[str], *, scopes: frozenset[str]) -> None:
        """Forget ``codes`` in each of ``scopes``."""
        if codes and scopes:
            params = {"codes": sorted(codes), "scopes": sorted(scopes)}
            await self._db.execute(_CLEAR, params)

    async def current(self, *, scopes: frozenset[str], within: timedelta) -> list[Condition]:
        """Conditions in ``scopes`` seen within ``within`` of now, by code then scope."""
        if not scopes:
            return []
        params = {"scopes": sorted(scopes), "within": within, "now": now_param(self._clock)}
        rows = await self._db.fetchall(_CURRENT, params)
        return [
            Condition(code=code, scope=scope, message=message, since=since, seen=seen)
            for code, scope, message, since, seen in rows
        ]
