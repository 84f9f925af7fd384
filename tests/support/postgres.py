"""The PostgreSQL server the tests use, and the databases each test run makes and drops on it.

The server is ``TRANSCRIBER_TEST_DATABASE_URL`` when set; else
``postgresql://postgres@127.0.0.1:5432/postgres``; else, when neither
answers, a private server this run starts from the installed PostgreSQL
binaries (``initdb``, ``pg_ctl``) in a temporary directory and stops at the
end. A run makes its own databases (``transcriber_test_<pid>_<n>``) and
drops them at the end, so runs on one server never see each other's rows.
A server that cannot be had fails the tests that need it, saying what to
set; nothing is skipped.
"""

from __future__ import annotations

import itertools
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import psycopg
import pytest

from transcriber_adapters.postgres import Database

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

    #: The private server this run started, stopped by ``close``; None when it found one.
    private: PrivateServer | None = None

    @classmethod
    def reach(cls) -> PostgresServer:
        """The test server (see the module), or a failed test saying what to set."""
        url = server_url()
        error = _answers(url)
        if error is None:
            return cls(url)
        if URL_VARIABLE not in os.environ:
            private = PrivateServer.start()
            if private is not None:
                server = cls(private.url)
                server.private = private
                return server
        pytest.fail(
            f"no PostgreSQL server for the tests ({error}): start one on 127.0.0.1:5432"
            f" (trust auth, user postgres), install its binaries (initdb, pg_ctl), or set"
            f" {URL_VARIABLE} to a server where this user may create databases",
            pytrace=False,
        )

    def create_database(self) -> str:
        """A new empty database of this run; its URL."""
        name = f"transcriber_test_{os.getpid()}_{next(self._numbers)}"
        self._admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        self._admin(f'CREATE DATABASE "{name}"')
        self._names.append(name)
        return with_database(self.url, name)

    def close(self) -> None:
        """Drop every database this run made, whoever is still connected; stop a private server."""
        try:
            while self._names:
                self._admin(f'DROP DATABASE IF EXISTS "{self._names.pop()}" WITH (FORCE)')
        finally:
            if self.private is not None:
                self.private.stop()

    def _admin(self, statement: str) -> None:
        with psycopg.connect(self.url, autocommit=True) as conn:
            conn.execute(statement)  # type: ignore[arg-type]


def _answers(url: str) -> str | None:
    """None when the server at ``url`` answers a query; else the error's class name."""
    try:
        with psycopg.connect(url, connect_timeout=5) as conn:
            conn.execute("SELECT 1")
    except psycopg.Error as exc:
        return type(exc).__name__
    return None


def _binary(name: str) -> str | None:
    """The path of a PostgreSQL program: on ``PATH``, or in Debian's versioned folder."""
    found = shutil.which(name)
    if found is not None:
        return found
    candidates = sorted(Path("/usr/lib/postgresql").glob(f"*/bin/{name}"))
    return str(candidates[-1]) if candidates else None


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class PrivateServer:
    """A throwaway PostgreSQL server in a temporary directory, trust auth, 127.0.0.1 only."""

    def __init__(self, root: Path, pg_ctl: str, prefix: list[str], port: int) -> None:
        self.root = root
        self.port = port
        self.url = f"postgresql://postgres@127.0.0.1:{port}/postgres"
        self._pg_ctl = pg_ctl
        self._prefix = prefix

    @classmethod
    def start(cls) -> PrivateServer | None:
        """Make and start one; None when the binaries (or, as root, a postgres user) are missing.

        ``initdb`` and ``postgres`` refuse to run as root: as root they run as
        the ``postgres`` user through ``runuser``.
        """
        initdb, pg_ctl = _binary("initdb"), _binary("pg_ctl")
        if initdb is None or pg_ctl is None:
            return None
        prefix: list[str] = []
        owner = None
        if os.geteuid() == 0:
            runuser = shutil.which("runuser")
            try:
                owner = pwd.getpwnam("postgres")
            except KeyError:
                return None
            if runuser is None:
                return None
            prefix = [runuser, "-u", "postgres", "--"]
        root = Path(tempfile.mkdtemp(prefix="transcriber-pg-"))
        if owner is not None:
            os.chown(root, owner.pw_uid, owner.pw_gid)
        server = cls(root, pg_ctl, prefix, _free_port())
        try:
            server._run(initdb, "-D", str(root / "data"), "-A", "trust", "-U", "postgres")
            server.resume()
        except BaseException:
            shutil.rmtree(root, ignore_errors=True)
            raise
        return server

    def resume(self) -> None:
        """Start the server (again) on its port and data, and wait until it answers."""
        options = f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 -c fsync=off"
        log = str(self.root / "server.log")
        self._run(
            self._pg_ctl, "-D", str(self.root / "data"), "-o", options, "-l", log, "-w", "start"
        )

    def crash(self) -> None:
        """Stop the server at once, as a crash would (``-m immediate``); ``resume`` restarts it."""
        self._run(self._pg_ctl, "-D", str(self.root / "data"), "-m", "immediate", "stop")

    def restart(self) -> None:
        """``pg_ctl restart -m immediate``: every connection breaks, the server answers again."""
        options = f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 -c fsync=off"
        log = str(self.root / "server.log")
        data = str(self.root / "data")
        self._run(
            self._pg_ctl, "-D", data, "-o", options, "-l", log, "-m", "immediate", "-w", "restart"
        )

    def stop(self) -> None:
        """Stop the server at once and remove its directory."""
        try:
            self.crash()
        finally:
            shutil.rmtree(self.root, ignore_errors=True)

    def _run(self, *command: str) -> None:
        subprocess.run([*self._prefix, *command], check=True, capture_output=True, timeout=120)


async def empty(database: Database) -> None:
    """Delete every row of every table but ``schema_migrations``: a fresh store for a test."""
    rows = await database.fetchall(
        "SELECT tablename FROM pg_tables WHERE schemaname = current_schema()"
        " AND tablename <> 'schema_migrations'"
    )
    if rows:
        tables = ", ".join(f'"{name}"' for (name,) in rows)
        await database.execute(f"TRUNCATE {tables} CASCADE")  # type: ignore[arg-type]


def scrubbed(error: BaseException, *secrets: str) -> bool:
    """True when no text of ``error`` (message and args) contains any of ``secrets``."""
    texts = [str(error), *(str(arg) for arg in error.args)]
    return not any(secret in text for secret in secrets for text in texts)
