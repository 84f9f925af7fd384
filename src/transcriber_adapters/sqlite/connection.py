"""``SqliteDatabase``: one SQLite connection in a thread of its own, shared by a process's stores.

One thread owns the one connection; async methods hand it a plain
function and await the result, so the event loop never blocks on the
database. A ``queue.SimpleQueue`` feeds the thread and
``loop.call_soon_threadsafe`` answers: cheaper per call than an executor's
chained futures, which matters at thousands of acquires a second.

A call whose awaiting task is cancelled still runs to its end in the
thread; a job acquired that way is simply leased to nobody until its lease
expires, which is what leases are for.
"""

from __future__ import annotations

import asyncio
import os
import queue
import sqlite3
import threading
import weakref
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any, Self, TypeVar

import attrs

from transcriber_adapters.datadir import private_file
from transcriber_adapters.sqlite.errors import translate
from transcriber_adapters.sqlite.schema import DEFAULT_BUSY_TIMEOUT, connect, migrate
from transcriber_adapters.system import SystemClock
from transcriber_core.errors import RepositoryUnavailable
from transcriber_core.ports import Clock

T = TypeVar("T")


class SqliteDatabase:
    """One SQLite file and the one connection, in a thread of its own, its stores share.

    Make one with ``await SqliteDatabase.open(path, clock=...)``, which also
    brings the schema up to date, and hand it to each store, as PostgreSQL's
    stores share one ``Database``: one process, one connection, one thread.
    Other processes on the same file open their own; WAL and
    ``busy_timeout`` serialise the writers.
    """

    def __init__(
        self, path: str | os.PathLike[str], *, busy_timeout: float = DEFAULT_BUSY_TIMEOUT
    ) -> None:
        """Start the connection thread; use ``open``, which also migrates the schema."""
        self._thread = ConnectionThread(lambda: connect_private(path, busy_timeout))
        self._closed = False
        #: Versions of the migrations this ``open`` applied; empty when the schema was current.
        self.applied_migrations: tuple[int, ...] = ()
        # A database dropped without close() still ends its thread.
        self._finalizer = weakref.finalize(self, self._thread.stop_soon)

    @classmethod
    async def open(
        cls,
        path: str | os.PathLike[str],
        *,
        clock: Clock | None = None,
        busy_timeout: float = DEFAULT_BUSY_TIMEOUT,
    ) -> Self:
        """Open (creating if needed) the database at ``path`` and apply pending migrations.

        ``clock`` (default: the system's) stamps the migrations applied.
        """
        database = cls(path, busy_timeout=busy_timeout)
        now = (clock or SystemClock()).now()
        try:
            applied = await database.call(_migrate, now)
        except BaseException:
            await database.close()
            raise
        database.applied_migrations = tuple(applied)
        return database

    async def close(self) -> None:
        """Close the connection and end its thread; later calls raise ``RepositoryUnavailable``."""
        if self._closed:
            return
        self._closed = True
        self._finalizer.detach()
        await self._thread.stop()

    def call(self, operation: Callable[..., T], *args: Any) -> asyncio.Future[T]:
        """Run ``operation(connection, *args)`` on the connection's thread; awaitable."""
        if self._closed:
            raise RepositoryUnavailable("the database is closed")
        return self._thread.submit(operation, *args)


class SqliteStore:
    """A store on a shared ``SqliteDatabase``; the base of each SQLite adapter.

    ``SqliteJobRepository(database, clock=...)`` and the owner, condition and
    budget stores share the database the composition root opened (one
    connection per process). ``open(path)`` makes a store with a database of
    its own, which its ``close`` closes: for tests, benchmarks and library users.
    """

    #: What the store is called in the error raised after ``close``.
    _what = "the database"

    def __init__(self, database: SqliteDatabase, *, clock: Clock | None = None) -> None:
        """Work on ``database``; ``clock`` (default: the system's) is the store's own (ADR 30)."""
        self._db = database
        #: The store's clock: every time it stamps or judges by (reference: queue rule 8).
        self._clock: Clock = clock or SystemClock()
        self._closed = False
        #: True when ``open`` made the database, so ``close`` closes it too.
        self._owns_database = False

    @property
    def applied_migrations(self) -> tuple[int, ...]:
        """Versions of the migrations the database's ``open`` applied."""
        return self._db.applied_migrations

    @classmethod
    async def open(
        cls,
        path: str | os.PathLike[str],
        *,
        clock: Clock | None = None,
        busy_timeout: float = DEFAULT_BUSY_TIMEOUT,
    ) -> Self:
        """A store on a database of its own at ``path``, migrated; ``close`` closes both.

        ``clock`` (default: the system's) is the store's own: the times it
        stamps and judges leases, delays and ages by (ADR 30).
        """
        database = await SqliteDatabase.open(path, clock=clock, busy_timeout=busy_timeout)
        store = cls(database, clock=clock)
        store._owns_database = True
        return store

    async def close(self) -> None:
        """End this store; a database it opened itself is closed too. Later calls raise."""
        if self._closed:
            return
        self._closed = True
        if self._owns_database:
            await self._db.close()

    def _call(self, operation: Callable[..., T], *args: Any) -> asyncio.Future[T]:
        if self._closed:
            raise RepositoryUnavailable(f"{self._what} is closed")
        return self._db.call(operation, *args)


def _migrate(conn: sqlite3.Connection, now: datetime) -> list[int]:
    return migrate(conn, now=now)


def connect_private(path: str | os.PathLike[str], busy_timeout: float) -> sqlite3.Connection:
    """``connect``, the database file made 0600 first: its WAL files take its mode (ADR 21)."""
    if os.fspath(path) != ":memory:":
        try:
            private_file(Path(path))
        except OSError as exc:
            # The OS text names the path (reference: Privacy): only its generic reason is kept.
            reason = os.strerror(exc.errno) if exc.errno is not None else "unknown error"
            raise RepositoryUnavailable(f"the database file cannot be opened: {reason}") from None
    return connect(path, busy_timeout=busy_timeout)


@attrs.frozen
class _Request:
    operation: Callable[..., Any]
    args: tuple[Any, ...]
    loop: asyncio.AbstractEventLoop
    future: asyncio.Future[Any]


@attrs.frozen
class _Stop:
    #: Who to tell when the connection is closed; None when nobody waits.
    loop: asyncio.AbstractEventLoop | None = None
    future: asyncio.Future[None] | None = None


class ConnectionThread:
    """One thread that owns one connection and runs functions on it for asyncio callers.

    The connection is opened by the first request, in the thread, so a
    failure to open reaches the caller of that request.
    """

    def __init__(self, connect: Callable[[], sqlite3.Connection]) -> None:
        self._connect = connect
        self._requests: queue.SimpleQueue[_Request | _Stop] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._serve, name="transcriber-sqlite", daemon=True)
        self._thread.start()

    def submit(self, operation: Callable[..., T], *args: Any) -> asyncio.Future[T]:
        """Run ``operation(connection, *args)`` in the thread; its result or error, awaitable."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()
        self._requests.put(_Request(operation, args, loop, future))
        return future

    async def stop(self) -> None:
        """Serve the requests already queued, close the connection, end the thread."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[None] = loop.create_future()
        self._requests.put(_Stop(loop, future))
        await future

    def stop_soon(self) -> None:
        """Ask the thread to close and end without waiting (for garbage collection)."""
        self._requests.put(_Stop())

    def _serve(self) -> None:
        conn: sqlite3.Connection | None = None
        try:
            while True:
                request = self._requests.get()
                if isinstance(request, _Stop):
                    if conn is not None:
                        conn.close()
                        conn = None
                    if request.loop is not None and request.future is not None:
                        _answer(request.loop, request.future, None, None)
                    return
                try:
                    if conn is None:
                        conn = self._connect()
                    result = request.operation(conn, *request.args)
                except sqlite3.Error as exc:
                    error = translate(exc)
                    error.__cause__ = exc
                    _answer(request.loop, request.future, None, error)
                except Exception as exc:  # noqa: BLE001 - handed to the awaiting caller
                    _answer(request.loop, request.future, None, exc)
                else:
                    _answer(request.loop, request.future, result, None)
        finally:
            if conn is not None:
                conn.close()


def _answer(
    loop: asyncio.AbstractEventLoop,
    future: asyncio.Future[Any],
    result: Any,
    error: BaseException | None,
) -> None:
    try:
        loop.call_soon_threadsafe(_settle, future, result, error)
    except RuntimeError:
        # The caller's event loop is closed; nobody is left to tell.
        return


def _settle(future: asyncio.Future[Any], result: Any, error: BaseException | None) -> None:
    if future.cancelled():
        return
    if error is None:
        future.set_result(result)
    else:
        future.set_exception(error)
