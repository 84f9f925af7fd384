"""The job repository and owner store on stdlib ``sqlite3``: one file, WAL, numbered migrations.

``ACQUIRE_SQL`` and ``SAVE_IF_HELD_SQL`` are the exact statements the
repository runs, exposed so a benchmark can run them on a bare connection.
"""

from transcriber_adapters.sqlite.budgets import SqliteBudgetStore
from transcriber_adapters.sqlite.chats import SqliteChatStore
from transcriber_adapters.sqlite.conditions import SqliteConditionStore
from transcriber_adapters.sqlite.connection import SqliteDatabase
from transcriber_adapters.sqlite.owners import SqliteOwnerStore
from transcriber_adapters.sqlite.people import SqlitePeopleStore
from transcriber_adapters.sqlite.repository import SqliteJobRepository
from transcriber_adapters.sqlite.schema import connect, migrate, shipped_migrations
from transcriber_adapters.sqlite.statements import ACQUIRE_SQL, ROWS, SAVE_IF_HELD_SQL
from transcriber_adapters.sqlite.summaries import SqliteSummaryStore
from transcriber_adapters.sqlite.times import from_db, to_db
from transcriber_adapters.sqlite.usage import SqliteUsageStore
from transcriber_adapters.sqlite.voices import SqliteVoiceStore

#: A job's named parameters as every SQLite statement binds them.
job_params = ROWS.job_params

__all__ = [
    "ACQUIRE_SQL",
    "SAVE_IF_HELD_SQL",
    "SqliteBudgetStore",
    "SqliteChatStore",
    "SqliteConditionStore",
    "SqliteDatabase",
    "SqliteJobRepository",
    "SqliteOwnerStore",
    "SqlitePeopleStore",
    "SqliteSummaryStore",
    "SqliteUsageStore",
    "SqliteVoiceStore",
    "connect",
    "from_db",
    "job_params",
    "migrate",
    "shipped_migrations",
    "to_db",
]
