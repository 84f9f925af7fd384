"""``PostgresOwnerStore``: the admin panel's owner, sessions and login back-off on PostgreSQL.

The same statements as SQLite's (``sqlite/statements.py``), in PostgreSQL's
dialect; the races they settle (two setups, a logout racing a page view,
parallel wrong guesses) are settled the same way, by one statement each.
The owner store keeps its ``now`` parameters: only API processes use it, and
its times (session expiry, back-off) are the API process's own (ADR 32).
"""

from __future__ import annotations

from datetime import datetime

from transcriber_adapters.postgres.connection import Database
from transcriber_adapters.postgres.statements import ROWS
from transcriber_adapters.sql.rows import SESSION_COLUMNS
from transcriber_core.entities import LoginFailures, OwnerSession

_SESSION_COLUMNS = ", ".join(SESSION_COLUMNS)

#: One statement, so two concurrent setups cannot both win: the loser changes no row.
_CREATE_OWNER = (
    "INSERT INTO owner (id, password_hash, created) VALUES (1, %(password_hash)s, %(created)s)"
    " ON CONFLICT (id) DO NOTHING"
)
_GET_OWNER_HASH = "SELECT password_hash FROM owner WHERE id = 1"
_CHANGE_PASSWORD = "UPDATE owner SET password_hash = %(password_hash)s WHERE id = 1"  # noqa: S105
_INSERT_SESSION = (
    f"INSERT INTO admin_sessions ({_SESSION_COLUMNS}) VALUES"
    " (%(id_hash)s, %(csrf)s, %(created)s, %(last_seen)s, %(expires)s, %(flash)s)"
)
_GET_SESSION = f"SELECT {_SESSION_COLUMNS} FROM admin_sessions WHERE id_hash = %(id_hash)s"
#: An UPDATE, never an upsert: a logout racing a page view stays a logout.
_SAVE_SESSION = (
    "UPDATE admin_sessions SET last_seen = %(last_seen)s, expires = %(expires)s,"
    " flash = %(flash)s WHERE id_hash = %(id_hash)s"
)
_DELETE_SESSION = "DELETE FROM admin_sessions WHERE id_hash = %(id_hash)s"
_DELETE_ALL_SESSIONS = "DELETE FROM admin_sessions"
_DELETE_EXPIRED_SESSIONS = "DELETE FROM admin_sessions WHERE expires <= %(now)s"
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


class PostgresOwnerStore:
    """The ``OwnerStore`` port on a PostgreSQL ``Database`` (shared with the other stores)."""

    def __init__(self, database: Database) -> None:
        """Use ``database``'s pool; the schema is already migrated by ``Database.open``."""
        self._db = database

    async def get_owner_hash(self) -> str | None:
        """The owner's password hash, or None while no owner exists."""
        row = await self._db.fetchone(_GET_OWNER_HASH)
        return None if row is None else str(row[0])

    async def create_owner(self, password_hash: str, *, now: datetime) -> bool:
        """Store the hash with one ``INSERT … ON CONFLICT DO NOTHING``; False if an owner exists."""
        params = {"password_hash": password_hash, "created": now}
        return await self._db.execute(_CREATE_OWNER, params) == 1

    async def change_password(self, password_hash: str, *, now: datetime) -> bool:
        """Replace the hash and delete every session in one transaction; False without an owner."""
        # One transaction: no moment exists where the new password is set and an old
        # session still opens pages, nor where sessions are gone but the old password works.
        async with self._db.transaction() as conn:
            cursor = await conn.execute(_CHANGE_PASSWORD, {"password_hash": password_hash})
            if cursor.rowcount != 1:
                return False
            await conn.execute(_DELETE_ALL_SESSIONS)
        return True

    async def create_session(self, session: OwnerSession) -> None:
        """Insert the session; a stored ``id_hash`` raises ``Conflict``."""
        await self._db.execute(_INSERT_SESSION, ROWS.session_params(session))

    async def get_session(self, id_hash: str) -> OwnerSession | None:
        """The session stored under ``id_hash``, expired or not; None when there is none."""
        row = await self._db.fetchone(_GET_SESSION, {"id_hash": id_hash})
        return None if row is None else ROWS.session_from_row(row)

    async def save_session(self, session: OwnerSession) -> bool:
        """Update ``last_seen``, ``expires`` and ``flash`` of a stored session; False when gone."""
        return await self._db.execute(_SAVE_SESSION, ROWS.session_params(session)) == 1

    async def delete_session(self, id_hash: str) -> None:
        """End one session; nothing happens when it does not exist."""
        await self._db.execute(_DELETE_SESSION, {"id_hash": id_hash})

    async def delete_expired_sessions(self, *, now: datetime) -> int:
        """Remove the sessions whose ``expires`` is not after ``now``; how many there were."""
        return await self._db.execute(_DELETE_EXPIRED_SESSIONS, {"now": now})

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
