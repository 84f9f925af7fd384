"""``Database``: one pool of connections per process to one PostgreSQL database (ADR 32).

Every PostgreSQL store of a process (owner, conditions, budgets, and the job
repository to come) shares one ``Database``: one port, one object, one pool.
Connections are autocommitted, so each statement is its own transaction;
``transaction()`` groups the few that must be one. Every psycopg error
raised inside ``connection()`` or ``transaction()`` leaves as a transcriber
error (``errors.translated``); the URL, which may hold a password, never
reaches an error or a log.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any, LiteralString

from psycopg import AsyncConnection
from psycopg_pool import AsyncConnectionPool

from transcriber_adapters.postgres.errors import translated
from transcriber_adapters.postgres.schema import migrate
from transcriber_adapters.sql.migrations import Migration
from transcriber_core.errors import DatabaseDown, RepositoryUnavailable

#: Connections one process keeps at most: every step loop, /health and the admin pages
#: share them, each holding one only for a statement or a short transaction.
DEFAULT_POOL_SIZE = 10
#: Seconds a caller waits for the database (to connect, or for a free connection)
#: before the call fails as ``RepositoryUnavailable``.
DEFAULT_WAIT_SECONDS = 10.0

Params = Sequence[Any] | dict[str, Any] | None


async def _configure(conn: AsyncConnection[Any]) -> None:
    # Times read back are UTC, whatever the server's or the role's default zone.
    await conn.execute("SET TIME ZONE 'UTC'")


class Database:
    """One PostgreSQL database and this process's pool on it; make one with ``await open()``."""

    def __init__(self, pool: AsyncConnectionPool[AsyncConnection[Any]]) -> None:
        """Wrap an opened pool; use ``open``, which also migrates the schema."""
        self._pool = pool
        #: Versions of the migrations this ``open`` applied; empty when the schema was current.
        self.applied_migrations: tuple[int, ...] = ()

    @classmethod
    async def open(
        cls,
        url: str,
        *,
        pool_size: int = DEFAULT_POOL_SIZE,
        wait_seconds: float = DEFAULT_WAIT_SECONDS,
        migrations: Sequence[Migration] | None = None,
    ) -> Database:
        """Connect to ``url``, then apply the pending migrations (all shipped ones by default).

        Raises ``RepositoryUnavailable`` when the database does not answer
        within ``wait_seconds``, or its schema is newer than this code knows.
        """
        if pool_size < 1:
            raise ValueError("the pool needs at least one connection")
        pool: AsyncConnectionPool[AsyncConnection[Any]] = AsyncConnectionPool(
            url,
            min_size=1,
            max_size=pool_size,
            kwargs={"autocommit": True},
            configure=_configure,
            timeout=wait_seconds,
            name="transcriber",
            open=False,
        )
        try:
            async with translated():
                await pool.open(wait=True, timeout=wait_seconds)
        except RepositoryUnavailable:
            await pool.close()
            raise DatabaseDown("the PostgreSQL database did not answer") from None
        database = cls(pool)
        try:
            database.applied_migrations = tuple(await migrate(database, migrations))
        except BaseException:
            await database.close()
            raise
        return database

    async def close(self) -> None:
        """Close every connection; later calls raise ``RepositoryUnavailable``."""
        await self._pool.close()

    @asynccontextmanager
    async def connection(self) -> AsyncIterator[AsyncConnection[Any]]:
        """A pooled autocommit connection for the block; psycopg errors leave translated."""
        async with translated(), self._pool.connection() as conn:
            yield conn

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[AsyncConnection[Any]]:
        """A connection inside one transaction: committed after the block, rolled back on error."""
        async with self.connection() as conn, conn.transaction():
            yield conn

    async def execute(self, sql: LiteralString, params: Params = None) -> int:
        """Run one statement on its own; the rows it changed."""
        async with self.connection() as conn:
            cursor = await conn.execute(sql, params)
            return cursor.rowcount

    async def fetchone(self, sql: LiteralString, params: Params = None) -> tuple[Any, ...] | None:
        """The first row of one statement, or None."""
        async with self.connection() as conn:
            cursor = await conn.execute(sql, params)
            return await cursor.fetchone()

    async def fetchall(self, sql: LiteralString, params: Params = None) -> list[tuple[Any, ...]]:
        """Every row of one statement."""
        async with self.connection() as conn:
            cursor = await conn.execute(sql, params)
            return await cursor.fetchall()
