"""Bringing a PostgreSQL database's schema up to date, once, whichever process starts first.

The migrations are this package's own numbered set (``migrations/NNNN_*.sql``;
0001 is the whole schema SQLite reached in its 0001-0009). All pending ones
are applied in one transaction that first takes a transaction-level advisory
lock (``pg_advisory_xact_lock``): processes starting together queue on it,
the first applies, the others then find nothing to do. PostgreSQL's DDL is
transactional, so a failing migration leaves the schema as it was. Applied
versions are rows of ``schema_migrations``; a database holding a version
this code does not know was made by a newer release, and is refused.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractAsyncContextManager
from typing import Any, Protocol

from psycopg import AsyncConnection

from transcriber_adapters.sql.migrations import Migration, pending, shipped


class Transactions(Protocol):
    """What migrating needs of a ``Database``: one transaction (no import of it, no circle)."""

    def transaction(self) -> AbstractAsyncContextManager[AsyncConnection[Any]]:
        """A connection inside one transaction."""
        ...


#: The advisory lock key migrations hold ("trnscrbr" in ASCII, as a bigint).
MIGRATION_LOCK = 0x74726E7363726272

_SCHEMA_MIGRATIONS = (
    "CREATE TABLE IF NOT EXISTS schema_migrations ("
    " version integer PRIMARY KEY,"
    " applied timestamptz NOT NULL DEFAULT statement_timestamp())"
)


def shipped_migrations() -> list[Migration]:
    """The PostgreSQL migrations in this package, in version order."""
    return shipped("transcriber_adapters.postgres")


async def migrate(
    database: Transactions, migrations: Sequence[Migration] | None = None
) -> list[int]:
    """Apply the migrations not yet applied, in one transaction under the lock; their versions."""
    wanted = shipped_migrations() if migrations is None else migrations
    async with database.transaction() as conn:
        await conn.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK,))
        await conn.execute(_SCHEMA_MIGRATIONS)
        cursor = await conn.execute("SELECT version FROM schema_migrations")
        applied = [row[0] for row in await cursor.fetchall()]
        done: list[int] = []
        for migration in pending(wanted, applied):
            # A shipped file, not input: several statements run in one simple query.
            await conn.execute(migration.sql)  # type: ignore[arg-type,unused-ignore]
            await conn.execute(
                "INSERT INTO schema_migrations (version) VALUES (%s)", (migration.version,)
            )
            done.append(migration.version)
    return done
