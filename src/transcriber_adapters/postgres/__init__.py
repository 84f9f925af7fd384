"""The PostgreSQL adapters (the ``postgres`` extra): one ``Database`` per process, shared by stores.

``Database.open(url)`` connects one pool and brings the schema up to date
(numbered migrations under an advisory lock); the job repository (ADR 39)
and the owner, condition and budget stores run on it; ``PostgresWakeupFeed``
listens for the wake-ups the repository sends with
``pg_notify(WAKEUP_CHANNEL, state)`` (ADR 32).
"""

from transcriber_adapters.postgres.budgets import PostgresBudgetStore
from transcriber_adapters.postgres.chats import PostgresChatStore
from transcriber_adapters.postgres.conditions import PostgresConditionStore
from transcriber_adapters.postgres.connection import DEFAULT_POOL_SIZE, Database
from transcriber_adapters.postgres.owners import PostgresOwnerStore
from transcriber_adapters.postgres.people import PostgresPeopleStore
from transcriber_adapters.postgres.repository import PostgresJobRepository
from transcriber_adapters.postgres.schema import MIGRATION_LOCK, migrate, shipped_migrations
from transcriber_adapters.postgres.summaries import PostgresSummaryStore
from transcriber_adapters.postgres.usage import PostgresUsageStore
from transcriber_adapters.postgres.voices import PostgresVoiceStore
from transcriber_adapters.postgres.wakeups import WAKEUP_CHANNEL, PostgresWakeupFeed

__all__ = [
    "DEFAULT_POOL_SIZE",
    "MIGRATION_LOCK",
    "WAKEUP_CHANNEL",
    "Database",
    "PostgresBudgetStore",
    "PostgresChatStore",
    "PostgresConditionStore",
    "PostgresJobRepository",
    "PostgresOwnerStore",
    "PostgresPeopleStore",
    "PostgresSummaryStore",
    "PostgresUsageStore",
    "PostgresVoiceStore",
    "PostgresWakeupFeed",
    "migrate",
    "shipped_migrations",
]
