"""The one place where psycopg exceptions become transcriber errors.

::

    IntegrityError (unique, check, foreign key)  ->  Conflict
    DiskFull (SQLSTATE 53100)                    ->  DiskFull               the database's disk
    OperationalError (but a serialization        ->  DatabaseDown           down, restarting,
      failure or deadlock: TransactionRollback)                             timed out, closed
      (PoolTimeout, PoolClosed, AdminShutdown, a broken connection)
    any other psycopg.Error                      ->  RepositoryUnavailable

``DatabaseDown`` is the service's condition and also a
``RepositoryUnavailable`` (a ``TransientError``): a step whose database call
failed this way waits without spending an attempt; any other failure is
retried after the retry pause. The vendor's text is
never kept: it may name the host, the user or a value from the row
(reference: Privacy); the original stays chained as ``__cause__`` for a
debugger, and nothing here logs it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import psycopg
from psycopg import errors as pg_errors

from transcriber_core.errors import Conflict, DatabaseDown, DiskFull, RepositoryUnavailable


def translate(error: psycopg.Error) -> Exception:
    """The transcriber error to raise instead of ``error``; the message is our own words."""
    if isinstance(error, psycopg.IntegrityError):
        return Conflict()
    if isinstance(error, pg_errors.DiskFull):
        return DiskFull("the disk under the job database is full")
    if isinstance(error, psycopg.OperationalError) and not isinstance(
        error, pg_errors.TransactionRollback
    ):
        return DatabaseDown()
    return RepositoryUnavailable()


@asynccontextmanager
async def translated() -> AsyncIterator[None]:
    """Raise the transcriber error of any psycopg error raised inside the block."""
    try:
        yield
    except psycopg.Error as exc:
        raise translate(exc) from exc
