"""``SqliteOwnerStore``: the admin panel's owner, sessions and login back-off in the SQLite file.

The same database as the job repository: the process's one
``SqliteDatabase`` (one connection, one thread); WAL and ``busy_timeout``
let every other process on the file share it. Sessions and failures live
here rather than in one process's memory so that every process on the
file sees a logout, a password change and a client's back-off at once
(ADR 17).
"""

from __future__ import annotations

import sqlite3
from datetime import datetime
from typing import Any, TypeVar

from transcriber_adapters.sqlite.connection import SqliteStore
from transcriber_adapters.sqlite.schema import immediate
from transcriber_adapters.sqlite.statements import (
    CHANGE_PASSWORD_SQL,
    CLEAR_LOGIN_FAILURES_SQL,
    CREATE_OWNER_SQL,
    DELETE_ALL_SESSIONS_SQL,
    DELETE_EXPIRED_SESSIONS_SQL,
    DELETE_SESSION_SQL,
    FORGET_LOGIN_FAILURES_SQL,
    GET_LOGIN_FAILURES_SQL,
    GET_OWNER_HASH_SQL,
    GET_SESSION_SQL,
    INSERT_LOGIN_FAILURES_SQL,
    INSERT_SESSION_SQL,
    ROWS,
    SAVE_SESSION_SQL,
    UPDATE_LOGIN_FAILURES_SQL,
)
from transcriber_adapters.sqlite.times import to_db
from transcriber_core.entities import LoginFailures, OwnerSession

T = TypeVar("T")


class SqliteOwnerStore(SqliteStore):
    """The ``OwnerStore`` port on a SQLite file; make one with ``await SqliteOwnerStore.open()``."""

    _what = "the owner store"

    async def get_owner_hash(self) -> str | None:
        """The owner's password hash, or None while no owner exists."""
        return await self._call(_get_owner_hash)

    async def create_owner(self, password_hash: str, *, now: datetime) -> bool:
        """Store the hash with one ``INSERT … ON CONFLICT DO NOTHING``; False if an owner exists."""
        return await self._call(_create_owner, password_hash, now)

    async def change_password(self, password_hash: str, *, now: datetime) -> bool:
        """Replace the hash and delete every session in one transaction; False without an owner."""
        return await self._call(_change_password, password_hash)

    async def create_session(self, session: OwnerSession) -> None:
        """Insert the session; a stored ``id_hash`` raises ``Conflict``."""
        await self._call(_execute, INSERT_SESSION_SQL, ROWS.session_params(session))

    async def get_session(self, id_hash: str) -> OwnerSession | None:
        """The session stored under ``id_hash``, expired or not; None when there is none."""
        return await self._call(_get_session, id_hash)

    async def save_session(self, session: OwnerSession) -> bool:
        """Update ``last_seen``, ``expires`` and ``flash`` of a stored session; False when gone."""
        params = ROWS.session_params(session)
        del params["csrf"], params["created"]
        return await self._call(_execute, SAVE_SESSION_SQL, params) == 1

    async def delete_session(self, id_hash: str) -> None:
        """End one session; nothing happens when it does not exist."""
        await self._call(_execute, DELETE_SESSION_SQL, {"id_hash": id_hash})

    async def delete_expired_sessions(self, *, now: datetime) -> int:
        """Remove the sessions whose ``expires`` is not after ``now``; how many there were."""
        return await self._call(_execute, DELETE_EXPIRED_SESSIONS_SQL, {"now": to_db(now)})

    async def get_login_failures(self, client: str) -> LoginFailures | None:
        """The failures counted for ``client``, or None."""
        return await self._call(_get_login_failures, client)

    async def save_login_failures(
        self, failures: LoginFailures, *, previous: LoginFailures | None
    ) -> bool:
        """Compare-and-set in one statement: store ``failures`` if ``previous`` is still stored."""
        params = ROWS.login_failures_params(failures, previous=previous)
        statement = INSERT_LOGIN_FAILURES_SQL if previous is None else UPDATE_LOGIN_FAILURES_SQL
        return await self._call(_execute, statement, params) == 1

    async def clear_login_failures(self, client: str) -> None:
        """Forget ``client``'s failures."""
        await self._call(_execute, CLEAR_LOGIN_FAILURES_SQL, {"client": client})

    async def forget_login_failures(self, *, before: datetime) -> int:
        """Remove failures last counted before ``before``; how many clients were forgotten."""
        return await self._call(_execute, FORGET_LOGIN_FAILURES_SQL, {"before": to_db(before)})


# The operations below run on the connection thread; each takes the connection first.


def _execute(conn: sqlite3.Connection, sql: str, params: dict[str, Any]) -> int:
    """Run one writing statement; the rows it changed."""
    return conn.execute(sql, params).rowcount


def _get_owner_hash(conn: sqlite3.Connection) -> str | None:
    rows = conn.execute(GET_OWNER_HASH_SQL).fetchall()
    return str(rows[0][0]) if rows else None


def _create_owner(conn: sqlite3.Connection, password_hash: str, now: datetime) -> bool:
    params = {"password_hash": password_hash, "created": to_db(now)}
    return conn.execute(CREATE_OWNER_SQL, params).rowcount == 1


def _change_password(conn: sqlite3.Connection, password_hash: str) -> bool:
    # One transaction: no moment exists where the new password is set and an old
    # session still opens pages, nor where sessions are gone but the old password works.
    with immediate(conn):
        changed = conn.execute(CHANGE_PASSWORD_SQL, {"password_hash": password_hash}).rowcount
        if changed:
            conn.execute(DELETE_ALL_SESSIONS_SQL)
    return changed == 1


def _get_session(conn: sqlite3.Connection, id_hash: str) -> OwnerSession | None:
    rows = conn.execute(GET_SESSION_SQL, {"id_hash": id_hash}).fetchall()
    return ROWS.session_from_row(rows[0]) if rows else None


def _get_login_failures(conn: sqlite3.Connection, client: str) -> LoginFailures | None:
    rows = conn.execute(GET_LOGIN_FAILURES_SQL, {"client": client}).fetchall()
    return ROWS.login_failures_from_row(rows[0]) if rows else None
