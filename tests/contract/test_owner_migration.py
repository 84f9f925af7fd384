"""An owner set up before owners were people becomes one on upgrade (SQLite 0028, PostgreSQL 0019).

The old database has its owner row (and a session of it); after the upgrade
the owner is a person named ``owner`` with the owner's role and the same
password hash, so the same password signs in without a new setup. The old
owner tables are gone (ADR 76).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from tests.support.postgres import PostgresServer
from transcriber_adapters.postgres import Database, PostgresPeopleStore
from transcriber_adapters.postgres import shipped_migrations as pg_migrations
from transcriber_adapters.sqlite import SqlitePeopleStore, connect, migrate, shipped_migrations
from transcriber_contracts.people_store import HASH, T0, person
from transcriber_core.people import PERSON_ID_LENGTH, Role

#: The argon2 hash the old owner row holds.
OLD_HASH = HASH


def _sqlite_before_0028(path: Path, *, invited: str | None = None) -> None:
    """A SQLite file migrated up to 0027 with an owner row, a session and maybe a person."""
    conn = connect(path)
    try:
        migrate(conn, now=T0, migrations=[m for m in shipped_migrations() if m.version < 28])
        conn.execute("INSERT INTO owner (id, password_hash, created) VALUES (1, ?, 5)", (OLD_HASH,))
        conn.execute(
            "INSERT INTO admin_sessions (id_hash, csrf, created, last_seen, expires)"
            " VALUES ('h', 'c', 5, 5, 6)"
        )
        if invited is not None:
            conn.execute(
                "INSERT INTO people (id, name, created) VALUES (?, ?, 5)",
                (person(1).id, invited),
            )
    finally:
        conn.close()


async def test_sqlite_owner_row_becomes_the_owner_person(tmp_path: Path) -> None:
    """The owner row upgrades to a person named owner, role owner, with the same hash."""
    path = tmp_path / "jobs.db"
    _sqlite_before_0028(path)
    people = await SqlitePeopleStore.open(path)
    try:
        assert 28 in people.applied_migrations
        owner = await people.find_owner()
        assert owner is not None
        assert (owner.name, owner.role, owner.password_hash) == ("owner", Role.OWNER, OLD_HASH)
        assert len(owner.id) == PERSON_ID_LENGTH
        assert owner.is_active
        assert await people.find_person("owner") == owner
    finally:
        await people.close()
    conn = connect(path)
    try:
        tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master")}
        rows = conn.execute("SELECT name, role, password_hash FROM people").fetchall()
    finally:
        conn.close()
    assert not {"owner", "admin_sessions"} & tables
    assert rows == [("owner", "owner", OLD_HASH)]


async def test_sqlite_without_an_owner_upgrades_to_no_owner(tmp_path: Path) -> None:
    """A database that never had an owner still has none: the setup link is offered."""
    path = tmp_path / "jobs.db"
    conn = connect(path)
    try:
        migrate(conn, now=T0, migrations=[m for m in shipped_migrations() if m.version < 28])
    finally:
        conn.close()
    people = await SqlitePeopleStore.open(path)
    try:
        assert await people.find_owner() is None
    finally:
        await people.close()


async def test_sqlite_owner_name_taken_by_a_person_gets_another(tmp_path: Path) -> None:
    """An invited person called owner keeps the name; the owner is owner-<start of its id>."""
    path = tmp_path / "jobs.db"
    _sqlite_before_0028(path, invited="owner")
    people = await SqlitePeopleStore.open(path)
    try:
        owner = await people.find_owner()
        assert owner is not None
        assert owner.name == f"owner-{owner.id[:8]}"
        invited = await people.find_person("owner")
        assert invited is not None
        assert invited.role is Role.PERSON
    finally:
        await people.close()


async def test_postgres_owner_row_becomes_the_owner_person(postgres: PostgresServer) -> None:
    """PostgreSQL's 0019 moves the owner row into people as SQLite's 0028 does."""
    url = postgres.create_database()
    old = await Database.open(url, migrations=[m for m in pg_migrations() if m.version < 19])
    try:
        await old.execute(
            "INSERT INTO owner (id, password_hash, created) VALUES (1, %(hash)s, %(t)s)",
            {"hash": OLD_HASH, "t": T0},
        )
    finally:
        await old.close()
    database = await Database.open(url)
    try:
        assert 19 in database.applied_migrations
        owner = await PostgresPeopleStore(database).find_owner()
        assert owner is not None
        assert (owner.name, owner.role, owner.password_hash) == ("owner", Role.OWNER, OLD_HASH)
        assert owner.created == T0
        assert len(owner.id) == PERSON_ID_LENGTH
        tables = await database.fetchall(
            "SELECT tablename FROM pg_tables WHERE tablename IN ('owner', 'admin_sessions')"
        )
        assert tables == []
    finally:
        await database.close()


async def test_sqlite_upgrade_from_0002_drops_the_signing_key_and_keeps_the_owner(
    tmp_path: Path,
) -> None:
    """A 0002 database's owner signs in with the same hash today; the old signing key is gone."""
    path = tmp_path / "jobs.db"
    conn = connect(path)
    try:
        migrate(conn, now=T0, migrations=[m for m in shipped_migrations() if m.version <= 2])
        conn.execute("INSERT INTO owner (id, password_hash, created) VALUES (1, ?, 0)", (OLD_HASH,))
        conn.execute("INSERT INTO secrets (name, value, created) VALUES ('session', x'00', 0)")
    finally:
        conn.close()
    people = await SqlitePeopleStore.open(path)
    try:
        owner = await people.find_owner()
        assert owner is not None
        assert owner.password_hash == OLD_HASH
    finally:
        await people.close()
    conn = connect(path)
    try:
        tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master")}
    finally:
        conn.close()
    assert "secrets" not in tables
    assert {"person_sessions", "login_failures"} <= tables


async def test_sqlite_schema_holds_one_owner_at_most(tmp_path: Path) -> None:
    """The partial unique index itself refuses a second owner, whatever SQL a hand edit runs."""
    path = tmp_path / "jobs.db"
    people = await SqlitePeopleStore.open(path)
    await people.close()
    conn = connect(path)
    try:
        insert = "INSERT INTO people (id, name, created, role) VALUES (?, ?, 0, 'owner')"
        conn.execute(insert, (person(1).id, "one"))
        with pytest.raises(sqlite3.IntegrityError):
            conn.execute(insert, (person(2).id, "two"))
    finally:
        conn.close()
