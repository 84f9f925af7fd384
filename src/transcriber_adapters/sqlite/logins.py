"""``SqliteLoginThrottle``: the sign-in's back-off in the SQLite file (ADR 17, ADR 76).

The same database as the job repository: the process's one
``SqliteDatabase`` (one connection, one thread); WAL and ``busy_timeout``
let every other process on the file share it. Failures live here rather
than in one process's memory so that every process on the file sees a
client's back-off at once.
"""

from __future__ import annotations

import sqlite3
from datetime import datetime
from typing import Any, TypeVar

from transcriber_adapters.sqlite.connection import SqliteStore
from transcriber_adapters.sqlite.statements import (
    CLEAR_LOGIN_FAILURES_SQL,
    FORGET_LOGIN_FAILURES_SQL,
    GET_LOGIN_FAILURES_SQL,
    INSERT_LOGIN_FAILURES_SQL,
    ROWS,
    UPDATE_LOGIN_FAILURES_SQL,
)
from transcriber_adapters.sqlite.times import to_db
from transcriber_core.entities import LoginFailures

T = TypeVar("T")


class SqliteLoginThrottle(SqliteStore):
    """The ``LoginThrottle`` port on a SQLite file; ``await SqliteLoginThrottle.open()``."""

    _what = "the login throttle"

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


def _get_login_failures(conn: sqlite3.Connection, client: str) -> LoginFailures | None:
    rows = conn.execute(GET_LOGIN_FAILURES_SQL, {"client": client}).fetchall()
    return ROWS.login_failures_from_row(rows[0]) if rows else None
