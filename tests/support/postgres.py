"""The PostgreSQL server the tests use, and the databases each test run makes and drops on it.

The server is ``TRANSCRIBER_TEST_DATABASE_URL`` when set, else
``postgresql://postgres@127.0.0.1:5432/postgres``. A run makes its own
databases (``transcriber_test_<pid>_<n>``) and drops them at the end, so
runs on one server never see each other's rows. An unreachable server fails
the tests that need it, with the URL to set; nothing is skipped.
"""

from __future__ import annotations

import itertools
import os
from datetime import datetime, timedelta
from urllib.parse import urlsplit, urlunsplit

import psycopg
import pytest

from transcriber_adapters.memory import ManualClock
from transcriber_adapters.postgres import Database, PostgresBudgetStore, PostgresConditionStore
from transcriber_core.entities import Condition

#: The variable naming the test server.
URL_VARIABLE = "TRANSCRIBER_TEST_DATABASE_URL"
#: The server used when the variable is not set.
DEFAULT_URL = "postgresql://postgres@127.0.0.1:5432/postgres"


def server_url() -> str:
    """The URL of the test server, from the environment or the default."""
    return os.environ.get(URL_VARIABLE) or DEFAULT_URL


def with_database(url: str, name: str) -> str:
    """``url`` pointing at database ``name`` on the same server."""
    return urlunsplit(urlsplit(url)._replace(path=f"/{name}"))


class PostgresServer:
    """A reachable server on which this run makes databases; ``drop_all`` removes them."""

    def __init__(self, url: str) -> None:
        self.url = url
        self._names: list[str] = []
        self._numbers = itertools.count(1)

    @classmethod
    def reach(cls) -> PostgresServer:
        """The test server, or a failed test naming the variable to set."""
        url = server_url()
        try:
            with psycopg.connect(url, connect_timeout=5) as conn:
                conn.execute("SELECT 1")
        except psycopg.Error as exc:
            pytest.fail(
                f"no PostgreSQL server for the tests ({type(exc).__name__}): start one on"
                f" 127.0.0.1:5432 (trust auth, user postgres) or set {URL_VARIABLE}"
                " to a server where this user may create databases",
                pytrace=False,
            )
        return cls(url)

    def create_database(self) -> str:
        """A new empty database of this run; its URL."""
        name = f"transcriber_test_{os.getpid()}_{next(self._numbers)}"
        self._admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        self._admin(f'CREATE DATABASE "{name}"')
        self._names.append(name)
        return with_database(self.url, name)

    def drop_all(self) -> None:
        """Drop every database this run made, whoever is still connected."""
        while self._names:
            self._admin(f'DROP DATABASE IF EXISTS "{self._names.pop()}" WITH (FORCE)')

    def _admin(self, statement: str) -> None:
        with psycopg.connect(self.url, autocommit=True) as conn:
            conn.execute(statement)  # type: ignore[arg-type]


async def empty(database: Database) -> None:
    """Delete every row of every table but ``schema_migrations``: a fresh store for a test."""
    rows = await database.fetchall(
        "SELECT tablename FROM pg_tables WHERE schemaname = current_schema()"
        " AND tablename <> 'schema_migrations'"
    )
    if rows:
        tables = ", ".join(f'"{name}"' for (name,) in rows)
        await database.execute(f"TRUNCATE {tables} CASCADE")  # type: ignore[arg-type]


# Until the store-clock ports (BudgetStore.take/levels and ConditionStore.report/current
# without ``now``) land, the suites still pass ``now``; these set the store's clock to it.


class NowPassingBudgets:
    """A ``PostgresBudgetStore`` seen through today's port: ``now`` moves its clock."""

    def __init__(self, database: Database) -> None:
        self.clock = ManualClock()
        self.store = PostgresBudgetStore(database, clock=self.clock)

    async def take(
        self, name: str, *, capacity: int, per: timedelta, now: datetime
    ) -> timedelta | None:
        self.clock.set(now)
        return await self.store.take(name, capacity=capacity, per=per)

    async def levels(self, *, now: datetime) -> dict[str, float]:
        self.clock.set(now)
        return await self.store.levels()


class NowPassingConditions:
    """A ``PostgresConditionStore`` seen through today's port: ``now`` moves its clock."""

    #: Any span works: ``current`` looks back this far from ``seen_after + SPAN``.
    SPAN = timedelta(days=1)

    def __init__(self, database: Database) -> None:
        self.clock = ManualClock()
        self.store = PostgresConditionStore(database, clock=self.clock)

    async def report(self, code: str, *, scope: str, message: str, now: datetime) -> None:
        self.clock.set(now)
        await self.store.report(code, scope=scope, message=message)

    async def clear(self, codes: frozenset[str], *, scopes: frozenset[str]) -> None:
        await self.store.clear(codes, scopes=scopes)

    async def current(self, *, scopes: frozenset[str], seen_after: datetime) -> list[Condition]:
        self.clock.set(seen_after + self.SPAN)
        return await self.store.current(scopes=scopes, within=self.SPAN)


def scrubbed(error: BaseException, *secrets: str) -> bool:
    """True when no text of ``error`` (message and args) contains any of ``secrets``."""
    texts = [str(error), *(str(arg) for arg in error.args)]
    return not any(secret in text for secret in secrets for text in texts)
