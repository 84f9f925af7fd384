"""The job repository and owner store on stdlib ``sqlite3``: one file, WAL, numbered migrations.

``ACQUIRE_SQL`` and ``SAVE_IF_HELD_SQL`` are the exact statements the
repository runs, exposed so a benchmark can run them on a bare connection.
"""

from transcriber_adapters.sqlite.budgets import SqliteBudgetStore
from transcriber_adapters.sqlite.conditions import SqliteConditionStore
from transcriber_adapters.sqlite.owners import SqliteOwnerStore
from transcriber_adapters.sqlite.repository import SqliteJobRepository
from transcriber_adapters.sqlite.schema import connect, migrate, shipped_migrations
from transcriber_adapters.sqlite.statements import (
    ACQUIRE_SQL,
    SAVE_IF_HELD_SQL,
    job_params,
)
from transcriber_adapters.sqlite.times import from_db, to_db

__all__ = [
    "ACQUIRE_SQL",
    "SAVE_IF_HELD_SQL",
    "SqliteBudgetStore",
    "SqliteConditionStore",
    "SqliteJobRepository",
    "SqliteOwnerStore",
    "connect",
    "from_db",
    "job_params",
    "migrate",
    "shipped_migrations",
    "to_db",
]
