"""The PostgreSQL adapter's own rules: migrations, error translation, and the wake-up feed."""

from __future__ import annotations

import asyncio
import logging
import multiprocessing
from collections.abc import AsyncIterator, Callable
from concurrent.futures import ProcessPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path

import psycopg
import pytest

from tests.support import postgres as support
from tests.support.postgres import PostgresServer, PrivateServer, scrubbed, with_database
from transcriber_adapters.postgres import (
    WAKEUP_CHANNEL,
    Database,
    PostgresPeopleStore,
    PostgresWakeupFeed,
    shipped_migrations,
)
from transcriber_adapters.postgres.wakeups import APPLICATION_NAME
from transcriber_adapters.sql.migrations import Migration
from transcriber_adapters.sqlite import connect, migrate
from transcriber_contracts.people_store import owner as an_owner
from transcriber_core.entities import STEP_STATES, State
from transcriber_core.errors import RepositoryUnavailable
from transcriber_core.policy import Settings

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
_MS = timedelta(milliseconds=1)

# -- migrations ----------------------------------------------------------------


@pytest.fixture
def fresh_url(postgres: PostgresServer) -> str:
    """A new empty database of this run."""
    return postgres.create_database()


def _columns(url: str) -> dict[str, set[str]]:
    with psycopg.connect(url) as conn:
        rows = conn.execute(
            "SELECT table_name, column_name FROM information_schema.columns"
            " WHERE table_schema = current_schema()"
        ).fetchall()
    tables: dict[str, set[str]] = {}
    for table, column in rows:
        tables.setdefault(table, set()).add(column)
    return tables


async def test_first_open_makes_the_whole_schema_sqlite_has(fresh_url: str, tmp_path: Path) -> None:
    """PostgreSQL's migrations make every table and column SQLite's make, and record themselves."""
    database = await Database.open(fresh_url)
    await database.close()
    assert database.applied_migrations == tuple(m.version for m in shipped_migrations())
    conn = connect(tmp_path / "jobs.db")
    try:
        migrate(conn, now=T0)
        sqlite_tables = {
            name: {row[1] for row in conn.execute(f"PRAGMA table_info({name})")}
            for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        }
    finally:
        conn.close()
    # The full-text index is each dialect's own (ADR 58): FTS5's table and its shadow
    # tables in SQLite, the generated ``jobs.search`` column in PostgreSQL.
    sqlite_tables = {
        name: columns
        for name, columns in sqlite_tables.items()
        if not name.startswith("jobs_search")
    }
    postgres_tables = _columns(fresh_url)
    postgres_tables["jobs"].discard("search")
    assert postgres_tables == sqlite_tables | {"schema_migrations": {"version", "applied"}}


async def test_second_open_applies_nothing(fresh_url: str) -> None:
    """Reopening a current database changes nothing, so a restart recreates nothing."""
    first = await Database.open(fresh_url)
    assert await PostgresPeopleStore(first).create_owner(an_owner())
    await first.close()
    second = await Database.open(fresh_url)
    try:
        assert second.applied_migrations == ()
        assert await PostgresPeopleStore(second).find_owner() == an_owner()
    finally:
        await second.close()


async def _open_and_tell(url: str) -> tuple[int, ...]:
    database = await Database.open(url, pool_size=1)
    await database.close()
    return database.applied_migrations


def _open_in_process(url: str) -> tuple[int, ...]:
    return asyncio.run(_open_and_tell(url))


async def test_processes_starting_together_migrate_once(fresh_url: str) -> None:
    """Four processes opening a fresh database at once: one applies every migration, others none."""
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(4, mp_context=context) as pool:
        loop = asyncio.get_running_loop()
        applied = await asyncio.gather(
            *(loop.run_in_executor(pool, _open_in_process, fresh_url) for _ in range(4))
        )
    every = tuple(migration.version for migration in shipped_migrations())
    assert sorted(applied) == [(), (), (), every]


async def test_a_failing_migration_changes_nothing(fresh_url: str) -> None:
    """A migration that breaks halfway leaves neither its tables nor any version behind."""
    broken = Migration(
        version=len(shipped_migrations()) + 1,
        name="broken",
        sql="CREATE TABLE half (id integer);\nINSERT INTO no_such_table VALUES (1);\n",
    )
    with pytest.raises(RepositoryUnavailable):
        await Database.open(fresh_url, migrations=[*shipped_migrations(), broken])
    assert _columns(fresh_url) == {}


async def test_a_newer_schema_is_refused_naming_both_versions(fresh_url: str) -> None:
    """A database a later release migrated is not opened; the error says which versions."""
    known = max(migration.version for migration in shipped_migrations())
    future = known + 5
    newer = Migration(version=future, name="future.sql", sql="CREATE TABLE future (id integer);")
    database = await Database.open(fresh_url, migrations=[*shipped_migrations(), newer])
    await database.close()
    with pytest.raises(RepositoryUnavailable, match=rf"version {future}.*\(up to {known}\)"):
        await Database.open(fresh_url)


# -- errors ----------------------------------------------------------------------


async def test_an_unreachable_server_is_unavailable_without_its_url() -> None:
    """Nobody listening: ``RepositoryUnavailable`` in our words, no host, user or password."""
    url = "postgresql://alice:s3cret-pw@127.0.0.1:9/nowhere"
    with pytest.raises(RepositoryUnavailable) as caught:
        await Database.open(url, wait_seconds=1)
    assert scrubbed(caught.value, "s3cret-pw", "alice", "nowhere", ":9")


async def test_an_unknown_database_is_unavailable_without_its_name(
    postgres: PostgresServer,
) -> None:
    """A server that refuses the database: unavailable, and the name stays out of the text."""
    url = with_database(postgres.url, "transcriber_no_such_database")
    with pytest.raises(RepositoryUnavailable) as caught:
        await Database.open(url, wait_seconds=2)
    assert scrubbed(caught.value, "transcriber_no_such_database")


async def test_a_closed_database_is_unavailable(postgres_url: str) -> None:
    """A call after ``close`` raises the core's transient error, not the driver's."""
    database = await Database.open(postgres_url, pool_size=1)
    await database.close()
    with pytest.raises(RepositoryUnavailable):
        await PostgresPeopleStore(database).find_owner()


async def test_a_statement_error_is_unavailable_in_our_words(pg_database: Database) -> None:
    """A failing statement raises ``RepositoryUnavailable`` without the server's message."""
    with pytest.raises(RepositoryUnavailable) as caught:
        await pg_database.execute("SELECT * FROM no_such_table_here")
    assert scrubbed(caught.value, "no_such_table_here")
    assert isinstance(caught.value.__cause__, psycopg.Error)


async def test_the_pool_recovers_from_killed_connections(fresh_url: str) -> None:
    """A server that dropped every pooled connection: each fails one call (transient), then none."""
    database = await Database.open(fresh_url, pool_size=3)
    people = PostgresPeopleStore(database)
    try:
        await asyncio.gather(*(people.find_owner() for _ in range(6)))
        async with await psycopg.AsyncConnection.connect(fresh_url, autocommit=True) as conn:
            cursor = await conn.execute(
                "SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) FROM pg_stat_activity"
                " WHERE datname = current_database() AND pid <> pg_backend_pid()"
            )
            row = await cursor.fetchone()
        assert row is not None
        (killed,) = row
        assert killed >= 1
        failures = 0
        for _ in range(killed + 3):
            try:
                await people.find_owner()
            except RepositoryUnavailable:
                failures += 1
        assert failures <= killed
        assert await people.find_owner() is None
    finally:
        await database.close()


def test_the_pool_needs_a_connection() -> None:
    """A pool of no connections is a configuration mistake, refused before connecting."""
    with pytest.raises(ValueError, match="at least one"):
        asyncio.run(Database.open("postgresql://127.0.0.1/x", pool_size=0))


# -- wake-ups ----------------------------------------------------------------------


class Heard:
    """The states a feed handed over, and a way to await the next ones."""

    def __init__(self) -> None:
        self.states: list[State] = []
        self._changed = asyncio.Event()

    def __call__(self, state: State) -> None:
        self.states.append(state)
        self._changed.set()

    async def until(self, done: Callable[[list[State]], bool]) -> None:
        """Wait until ``done(states)`` holds."""
        while not done(self.states):
            self._changed.clear()
            await self._changed.wait()

    async def reconnected(self) -> None:
        """Wait for the wake-up of every step a feed sends once it listens, then forget it."""
        await self.until(lambda states: set(STEP_STATES) <= set(states))
        self.states.clear()


@pytest.fixture
async def feed_and_heard(postgres_url: str) -> AsyncIterator[tuple[PostgresWakeupFeed, Heard]]:
    """A feed listening on this run's database in a task, and what it heard; cancelled after."""
    feed = PostgresWakeupFeed(postgres_url, settings=Settings(reconnect_base=_MS))
    heard = Heard()
    task = asyncio.create_task(feed.listen(heard))
    try:
        async with asyncio.timeout(30):
            await heard.reconnected()
        yield feed, heard
    finally:
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task


async def _notify(url: str, payload: str) -> None:
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        await conn.execute("SELECT pg_notify(%s, %s)", (WAKEUP_CHANNEL, payload))


async def test_a_notify_from_another_connection_wakes_its_state(
    feed_and_heard: tuple[PostgresWakeupFeed, Heard], postgres_url: str
) -> None:
    """``pg_notify`` on the channel from another process's connection calls ``notify(state)``."""
    _, heard = feed_and_heard
    await _notify(postgres_url, "recognize")
    async with asyncio.timeout(10):
        await heard.until(lambda states: states == [State.RECOGNIZE])


async def test_payloads_that_are_no_step_are_ignored(
    feed_and_heard: tuple[PostgresWakeupFeed, Heard], postgres_url: str
) -> None:
    """A terminal state or garbage on the channel wakes nobody; the feed goes on listening."""
    _, heard = feed_and_heard
    for payload in ("done", "nonsense", ""):
        await _notify(postgres_url, payload)
    await _notify(postgres_url, "check")
    async with asyncio.timeout(10):
        await heard.until(lambda states: states == [State.CHECK])


async def test_a_killed_listening_connection_reconnects(
    feed_and_heard: tuple[PostgresWakeupFeed, Heard], postgres_url: str
) -> None:
    """``pg_terminate_backend`` on the listener: it connects again, and later notifies arrive."""
    _, heard = feed_and_heard
    async with await psycopg.AsyncConnection.connect(postgres_url, autocommit=True) as conn:
        cursor = await conn.execute(
            "SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) FROM pg_stat_activity"
            " WHERE application_name = %s AND datname = current_database()",
            (APPLICATION_NAME,),
        )
        assert await cursor.fetchone() == (1,)
    async with asyncio.timeout(30):
        await heard.reconnected()
    await _notify(postgres_url, "convert")
    async with asyncio.timeout(10):
        await heard.until(lambda states: states == [State.CONVERT])


class _Lost(logging.Handler):
    """Counts the feed's "connection lost" log lines and wakes a waiter at each."""

    def __init__(self) -> None:
        super().__init__()
        self.records: list[logging.LogRecord] = []
        self.changed = asyncio.Event()

    def emit(self, record: logging.LogRecord) -> None:
        if record.getMessage() == "postgres.wakeups_lost":
            self.records.append(record)
            self.changed.set()


async def test_an_unreachable_database_is_retried_without_raising() -> None:
    """No server: ``listen`` tries again and again, backing off, and ends only when cancelled."""
    url = "postgresql://alice:s3cret-pw@127.0.0.1:9/nowhere"
    feed = PostgresWakeupFeed(url, settings=Settings(reconnect_base=_MS))
    heard = Heard()
    lost = _Lost()
    logger = logging.getLogger("transcriber.postgres")
    logger.addHandler(lost)
    task = asyncio.create_task(feed.listen(heard))
    try:
        async with asyncio.timeout(30):
            while len(lost.records) < 3:
                lost.changed.clear()
                await lost.changed.wait()
        assert not task.done()
    finally:
        task.cancel()
        logger.removeHandler(lost)
    with pytest.raises(asyncio.CancelledError):
        await task
    assert heard.states == []
    assert [record.failures for record in lost.records[:3]] == [1, 2, 3]  # type: ignore[attr-defined]
    assert not any("s3cret" in str(record.__dict__) for record in lost.records)


# -- the tests' own server ------------------------------------------------------------


def test_a_private_server_starts_from_the_installed_binaries_and_goes() -> None:
    """With no server to reach, the tests can start one in a temp dir; stop leaves nothing."""
    private = PrivateServer.start()
    assert private is not None, "initdb and pg_ctl are installed on the test machines"
    try:
        with psycopg.connect(private.url, connect_timeout=10) as conn:
            row = conn.execute("SHOW listen_addresses").fetchone()
        assert row == ("127.0.0.1",)
    finally:
        private.stop()
    assert not private.root.exists()


def test_without_a_server_to_reach_the_run_uses_a_private_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """No variable and nobody on the default port: a private server serves, and goes at close."""
    monkeypatch.delenv(support.URL_VARIABLE, raising=False)
    monkeypatch.setattr(support, "DEFAULT_URL", "postgresql://postgres@127.0.0.1:9/postgres")
    server = support.PostgresServer.reach()
    assert server.private is not None
    try:
        url = server.create_database()
        with psycopg.connect(url) as conn:
            assert conn.execute("SELECT current_database()").fetchone() is not None
    finally:
        server.close()
    assert not server.private.root.exists()


def test_an_unreachable_server_named_by_the_variable_fails_loudly(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A variable naming a dead server fails the test, saying what to set; no private fallback."""
    monkeypatch.setenv(support.URL_VARIABLE, "postgresql://postgres@127.0.0.1:9/postgres")
    with pytest.raises(pytest.fail.Exception, match=support.URL_VARIABLE):
        support.PostgresServer.reach()
