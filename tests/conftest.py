"""Fixtures shared by unit and contract tests."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest

# Before anything loads NumPy: OpenBLAS without a thread pool, as in the service, so a
# test that forks ffmpeg beside a Whisper thread cannot hang (ADR 95).
import transcriber_app  # noqa: F401
from tests.support.postgres import PostgresServer, PrivateServer, empty
from tests.support.s3 import MotoS3
from transcriber_adapters.postgres import Database


@pytest.fixture(scope="session")
def moto_s3() -> Iterator[MotoS3]:
    """One moto S3 server on 127.0.0.1 for the session; each test makes its own bucket.

    botocore is told never to ask the instance metadata service, so no test
    leaves the loopback interface.
    """
    from moto.server import ThreadedMotoServer  # noqa: PLC0415 - heavy; only for tests that use it

    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("AWS_EC2_METADATA_DISABLED", "true")
        server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
        server.start()
        host, port = server.get_host_and_port()
        try:
            yield MotoS3(endpoint_url=f"http://{host}:{port}")
        finally:
            server.stop()


@pytest.fixture(scope="session")
def postgres() -> Iterator[PostgresServer]:
    """The test PostgreSQL server (tests/support/postgres.py); fails, never skips, without one.

    Every database the run makes on it is dropped at the end, and a private
    server the run started is stopped.
    """
    server = PostgresServer.reach()
    try:
        yield server
    finally:
        server.close()


@pytest.fixture(scope="session")
def postgres_url(postgres: PostgresServer) -> str:
    """One database of this run for the tests that share it; each empties it first."""
    return postgres.create_database()


@pytest.fixture
async def pg_database(postgres_url: str) -> AsyncIterator[Database]:
    """This run's database, migrated and emptied of rows, on a pool of its own."""
    database = await Database.open(postgres_url, pool_size=4)
    try:
        await empty(database)
        yield database
    finally:
        await database.close()


@pytest.fixture
def private_postgres() -> Iterator[PrivateServer]:
    """A PostgreSQL server of this test alone, which it may crash and restart (pg_ctl)."""
    server = PrivateServer.start()
    if server is None:
        pytest.fail(
            "a private PostgreSQL needs initdb and pg_ctl (and, as root, a postgres user)",
            pytrace=False,
        )
    try:
        yield server
    finally:
        server.stop()
