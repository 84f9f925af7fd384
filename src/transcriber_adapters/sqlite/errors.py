"""The one place where ``sqlite3`` exceptions become transcriber errors.

::

    sqlite3.IntegrityError  ->  Conflict               a record conflicts with a stored one
    SQLITE_FULL             ->  DiskFull               the disk under the database is full
    any other sqlite3.Error ->  RepositoryUnavailable  locked, I/O error, closed, corrupt

``RepositoryUnavailable`` is a ``TransientError``: a step whose database
call failed this way is retried after the retry pause like any other
temporary failure.
"""

from __future__ import annotations

import sqlite3

from transcriber_core.errors import Conflict, DiskFull, RepositoryUnavailable


def translate(error: sqlite3.Error) -> Exception:
    """The transcriber error to raise instead of ``error``; the message is our own words."""
    if isinstance(error, sqlite3.IntegrityError):
        return Conflict()
    if getattr(error, "sqlite_errorcode", 0) & 0xFF == sqlite3.SQLITE_FULL:
        return DiskFull("the disk under the job database is full")
    return RepositoryUnavailable()
