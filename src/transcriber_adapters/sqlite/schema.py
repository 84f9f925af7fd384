"""Opening a database file the one way, and bringing its schema up to date.

Migrations are the numbered files ``migrations/NNNN_name.sql`` shipped in
this package; once released a file is never edited, a change is a new file.
Applied versions are tracked in a ``schema_migrations`` table (version, and
when it was applied, in the adapter's time representation) rather than in
``PRAGMA user_version``: the table says when each step ran, and stays
readable with any SQL client.

All pending migrations are applied in one ``BEGIN IMMEDIATE`` transaction,
after reading which versions are applied inside that same transaction, so
several processes opening a fresh file at once apply each migration exactly
once, and a failing migration leaves the schema as it was.
"""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from datetime import datetime
from typing import Any

from transcriber_adapters.sql.migrations import Migration, pending, shipped
from transcriber_adapters.sqlite.times import to_db

#: How long a statement waits for another connection's write lock, in seconds.
DEFAULT_BUSY_TIMEOUT = 5.0

_SCHEMA_MIGRATIONS = (
    "CREATE TABLE IF NOT EXISTS schema_migrations ("
    " version INTEGER PRIMARY KEY, applied INTEGER NOT NULL) STRICT"
)


def connect(
    path: str | os.PathLike[str], *, busy_timeout: float = DEFAULT_BUSY_TIMEOUT
) -> sqlite3.Connection:
    """A connection set up the way every connection of the adapter is.

    WAL lets readers go on while one process writes; ``busy_timeout`` makes
    a writer wait for the lock instead of failing at once (threads and
    processes share one file); ``synchronous=NORMAL`` is durable across an
    application crash in WAL mode and skips an fsync per commit;
    ``secure_delete`` zeroes what a delete frees. Autocommit
    (``isolation_level=None``): a statement is its own transaction unless we
    say ``BEGIN IMMEDIATE``.
    """
    conn = sqlite3.connect(path, timeout=busy_timeout, isolation_level=None)
    try:
        conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout * 1000)}")
        _enable_wal(conn, busy_timeout)
        conn.execute("PRAGMA synchronous = NORMAL")
        conn.execute("PRAGMA foreign_keys = ON")
        # Deleted rows are overwritten with zeros, not left in free pages (ADR 36): said
        # here, not left to how the distribution built SQLite.
        conn.execute("PRAGMA secure_delete = ON")
    except BaseException:
        conn.close()
        raise
    return conn


def _enable_wal(conn: sqlite3.Connection, timeout: float) -> None:
    """Switch the file to WAL, waiting up to ``timeout`` for other connections doing the same.

    SQLite does not call the busy handler for a journal mode change, so two
    processes opening a fresh file at once would fail without this retry.
    """
    deadline = time.monotonic() + timeout
    pause = 0.001
    while True:
        try:
            conn.execute("PRAGMA journal_mode = WAL")
        except sqlite3.OperationalError as exc:
            busy = exc.sqlite_errorcode & 0xFF in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)
            if not busy or time.monotonic() >= deadline:
                raise
            time.sleep(pause)
            pause = min(pause * 2, 0.05)
        else:
            return


def shipped_migrations() -> list[Migration]:
    """The migrations in this package, in version order."""
    return shipped("transcriber_adapters.sqlite")


def migrate(
    conn: sqlite3.Connection, *, now: datetime, migrations: Iterable[Migration] | None = None
) -> list[int]:
    """Apply the migrations not yet applied, all in one transaction; return their versions."""
    wanted = shipped_migrations() if migrations is None else migrations
    with immediate(conn):
        conn.execute(_SCHEMA_MIGRATIONS)
        applied = [row[0] for row in conn.execute("SELECT version FROM schema_migrations")]
        done: list[int] = []
        for migration in pending(wanted, applied):
            for statement in split_statements(migration.sql):
                conn.execute(statement)
            conn.execute(
                "INSERT INTO schema_migrations (version, applied) VALUES (?, ?)",
                (migration.version, to_db(now)),
            )
            done.append(migration.version)
    return done


def truncate_wal(conn: sqlite3.Connection) -> None:
    """Copy the WAL into the database and empty it, so deleted rows' old pages leave it too.

    The WAL keeps the pages as they were before a delete until it is
    checkpointed and reset; ``TRUNCATE`` waits for writers (the busy
    timeout) and does nothing harmful when a reader still holds old pages:
    the next delete's checkpoint, or the last connection's close, empties it.
    """
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()


@contextmanager
def immediate(conn: sqlite3.Connection) -> Iterator[None]:
    """A write transaction taken at once, committed on success and rolled back on any error."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


# One statement on the connection thread, for the stores that need nothing more (voices,
# summaries); each takes the connection first, as ``SqliteStore._call`` passes it.


def write(conn: sqlite3.Connection, sql: str, params: dict[str, Any]) -> int:
    """Run one writing statement in its own ``BEGIN IMMEDIATE``; the rows it changed."""
    with immediate(conn):
        return conn.execute(sql, params).rowcount


def write_returning(conn: sqlite3.Connection, sql: str, params: dict[str, Any]) -> list[Any]:
    """Run one writing statement with ``RETURNING`` in its own ``BEGIN IMMEDIATE``; its rows."""
    with immediate(conn):
        return conn.execute(sql, params).fetchall()


def read(conn: sqlite3.Connection, sql: str, params: dict[str, Any]) -> list[Any]:
    """Every row of one reading statement."""
    return conn.execute(sql, params).fetchall()


def split_statements(script: str) -> Iterator[str]:
    """The complete SQL statements of ``script``, one by one.

    ``executescript`` would commit the surrounding transaction first, so a
    migration is run statement by statement inside ours instead.
    """
    pending = ""
    for line in script.splitlines(keepends=True):
        pending += line
        if sqlite3.complete_statement(pending):
            yield pending.strip()
            pending = ""
    if _has_code(pending):
        raise ValueError("a migration ends with an incomplete SQL statement")


def _has_code(sql: str) -> bool:
    """True when ``sql`` holds more than blanks and ``--`` comments."""
    return any(line.strip() and not line.strip().startswith("--") for line in sql.splitlines())
