"""``PostgresLoginThrottle``: the sign-in's back-off on PostgreSQL (ADR 17, ADR 76).

The same statements as SQLite's (``sqlite/statements.py``), in PostgreSQL's
dialect; parallel wrong guesses are settled the same way, by one
compare-and-set statement. The throttle keeps its callers' ``now``: only
API processes use it, and the back-off's times are the API process's own
(ADR 32).
"""

from __future__ import annotations

from datetime import datetime

from transcriber_adapters.postgres.connection import Database
from transcriber_adapters.postgres.statements import ROWS
from transcriber_core.entities import LoginFailures

_GET_LOGIN_FAILURES = "SELECT client, count, last FROM login_failures WHERE client = %(client)s"
_INSERT_LOGIN_FAILURES = (
    "INSERT INTO login_failures (client, count, last) VALUES (%(client)s, %(count)s, %(last)s)"
    " ON CONFLICT (client) DO NOTHING"
)
#: Compare-and-set on what the caller read: of parallel attempts, exactly one changes the row.
_UPDATE_LOGIN_FAILURES = (
    "UPDATE login_failures SET count = %(count)s, last = %(last)s"
    " WHERE client = %(client)s AND count = %(seen_count)s AND last = %(seen_last)s"
)
_CLEAR_LOGIN_FAILURES = "DELETE FROM login_failures WHERE client = %(client)s"
_FORGET_LOGIN_FAILURES = "DELETE FROM login_failures WHERE last < %(before)s"


class PostgresLoginThrottle:
    """The ``LoginThrottle`` port on a PostgreSQL ``Database`` (shared with the other stores)."""

    def __init__(self, database: Database) -> None:
        """Use ``database``'s pool; the schema is already migrated by ``Database.open``."""
        self._db = database

    async def get_login_failures(self, client: str) -> LoginFailures | None:
        """The failures counted for ``client``, or None."""
        row = await self._db.fetchone(_GET_LOGIN_FAILURES, {"client": client})
        return None if row is None else ROWS.login_failures_from_row(row)

    async def save_login_failures(
        self, failures: LoginFailures, *, previous: LoginFailures | None
    ) -> bool:
        """Compare-and-set in one statement: store ``failures`` if ``previous`` is still stored."""
        params = ROWS.login_failures_params(failures, previous=previous)
        statement = _INSERT_LOGIN_FAILURES if previous is None else _UPDATE_LOGIN_FAILURES
        return await self._db.execute(statement, params) == 1

    async def clear_login_failures(self, client: str) -> None:
        """Forget ``client``'s failures."""
        await self._db.execute(_CLEAR_LOGIN_FAILURES, {"client": client})

    async def forget_login_failures(self, *, before: datetime) -> int:
        """Remove failures last counted before ``before``; how many clients were forgotten."""
        return await self._db.execute(_FORGET_LOGIN_FAILURES, {"before": before})
