"""``serve`` starting while PostgreSQL restarts: it waits for the database, or exits promptly.

A private PostgreSQL server (tests/support/postgres.py) that the test
restarts with ``pg_ctl restart -m immediate`` while ``serve``'s first
database call of its start-up waits on a table lock the test holds, so the
restart breaks exactly that call, every time.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import threading
import time
from pathlib import Path

import psycopg
import pytest

from tests.support.postgres import PrivateServer
from tests.support.service import SERVE_COMMAND, running_service, write_config
from transcriber_adapters.postgres import Database

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

#: serve waits 30 s for a database that stays away, each try bounded by the pool's wait:
#: it must have exited well within this.
EXIT_WITHIN = 60.0
#: serve's first database call after the pool opened (web/auth.py, prepare_admin).
FIRST_TABLE = "person_sessions"


def migrated_database(server: PrivateServer) -> str:
    """The server's database with the schema in place, so serve's start-up only reads it."""
    url = server.url

    async def migrate() -> None:
        database = await Database.open(url, pool_size=1)
        await database.close()

    asyncio.run(migrate())
    return url


def wait_for_lock_waiter(url: str, timeout: float = 60.0) -> None:
    """Block until some backend waits on a lock (serve's call behind the test's lock)."""
    deadline = time.monotonic() + timeout
    with psycopg.connect(url, autocommit=True) as watcher:
        while time.monotonic() < deadline:
            waiting = watcher.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'"
            ).fetchone()
            if waiting and waiting[0]:
                return
            time.sleep(0.05)
    raise AssertionError("serve never reached its first database call")


def lock_first_table(url: str) -> psycopg.Connection:
    """A connection holding an exclusive lock on serve's first table, in an open transaction."""
    locker = psycopg.connect(url)
    locker.execute(f"LOCK TABLE {FIRST_TABLE} IN ACCESS EXCLUSIVE MODE")
    return locker


def test_serve_comes_up_after_postgres_restarts_under_its_first_call(
    tmp_path: Path, private_postgres: PrivateServer
) -> None:
    """The restart breaks serve's first call: it retries the database, logs it and serves."""
    url = migrated_database(private_postgres)
    locker = lock_first_table(url)

    def restart_under_serve() -> None:
        wait_for_lock_waiter(url)
        private_postgres.restart()

    restarter = threading.Thread(target=restart_under_serve)
    restarter.start()
    try:
        with running_service(
            tmp_path, config={"database": {"url": url}}, ready_timeout=90.0
        ) as service:
            with service.client() as client:
                health = client.get("/health")
            logs = service.logs()
    finally:
        restarter.join()
        locker.close()
    assert health.status_code == 200
    assert "service.database_wait" in logs
    assert "service.start" in logs


def test_serve_exits_promptly_when_postgres_stays_down_under_its_first_call(
    tmp_path: Path, private_postgres: PrivateServer
) -> None:
    """PostgreSQL crashes under serve's first call and stays down: serve exits 1, promptly."""
    url = migrated_database(private_postgres)
    locker = lock_first_table(url)
    config_path, _, _ = write_config(tmp_path, config={"database": {"url": url}})
    stderr = tmp_path / "stderr.log"
    with stderr.open("wb") as errors:
        process = subprocess.Popen(
            [*SERVE_COMMAND, "-c", str(config_path)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=errors,
            env={k: v for k, v in os.environ.items() if not k.startswith("TRANSCRIBER_")},
        )
    try:
        wait_for_lock_waiter(url)
        private_postgres.crash()
        crashed = time.monotonic()
        try:
            code = process.wait(EXIT_WITHIN + 30)
        except subprocess.TimeoutExpired:
            raise AssertionError(
                "serve neither served nor exited:\n" + stderr.read_text(errors="replace")
            ) from None
        took = time.monotonic() - crashed
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        locker.close()
        private_postgres.resume()
    logs = stderr.read_text(errors="replace")
    assert code == 1, logs
    assert "service.start_failed" in logs
    assert took < EXIT_WITHIN, took
