"""A person deleted takes their recordings, voices and prints along (SPEC §25, ADR 90).

The core rule (``deletion.forget_person``) over the real SQLite file and the
real PostgreSQL database; the tables are read afterwards as they are stored.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import attrs

from tests.support.world import make_world
from transcriber_adapters.memory.diarizer import MemoryDiarizer
from transcriber_adapters.postgres import (
    Database,
    PostgresJobRepository,
    PostgresPeopleStore,
    PostgresVoiceStore,
)
from transcriber_adapters.sqlite import SqliteJobRepository, SqlitePeopleStore, SqliteVoiceStore
from transcriber_contracts.people_store import HOUR, active, digest, session, token
from transcriber_contracts.voice_store import axis, voice
from transcriber_core.clocks import ManualClock
from transcriber_core.deletion import forget_person
from transcriber_core.entities import State, Turn
from transcriber_core.people import person_owner
from transcriber_core.ports import JobRepository, PeopleStore, VoiceStore

#: How many rows of each table name the owner key or the person id ``:who``.
COUNTS = {
    "jobs": "SELECT count(*) FROM jobs WHERE owner = {owner}",
    "prints": "SELECT count(*) FROM jobs WHERE owner = {owner} AND prints <> '[]'",
    "voices": "SELECT count(*) FROM voices WHERE owner = {owner}",
    "people": "SELECT count(*) FROM people WHERE id = {person}",
    "tokens": "SELECT count(*) FROM person_tokens WHERE person_id = {person}",
    "sessions": "SELECT count(*) FROM person_sessions WHERE person_id = {person}",
    "chats": "SELECT count(*) FROM person_chats WHERE person_id = {person}",
}
Read = Callable[[str, dict[str, Any]], Awaitable[int]]


async def scenario(  # noqa: PLR0917 - the two tests' stores, in one order
    tmp_path: Path,
    clock: ManualClock,
    repo: JobRepository,
    people: PeopleStore,
    voices: VoiceStore,
    read: Read,
    placeholder: Callable[[str], str],
) -> None:
    """Two people with a recording (speakers' prints and all), a voice, a token, a chat each;
    one is deleted: none of their rows is left, every one of the other's is."""
    world = make_world(tmp_path, repo=repo, clock=clock)
    diarizer = MemoryDiarizer((Turn(speaker="a", start=0, end=60),), {"a": axis(0)})
    world.services = attrs.evolve(world.services, voices=voices, diarizer=diarizer)
    gone, kept = await active(people, 1), await active(people, 2)
    for n, who in ((1, gone), (2, kept)):
        owner = person_owner(who.id)
        job = await world.submit(owner=owner, speakers_wanted=0)
        done = await world.run_to_end(job.id)
        assert done.state is State.DONE, done.error
        assert done.prints
        await voices.add_voice(attrs.evolve(voice(f"v{n}", owner), owner=owner), axis(n))
        await people.add_token(token(n, who.id))
        await people.create_person_session(session(n, who.id))
        await people.make_link_code(who.id, code_hash=digest(f"c{n}"), lifetime=HOUR)
        assert await people.use_link_code(digest(f"c{n}"), chat_id=70 + n) == who

    async def counts(person_id: str) -> dict[str, int]:
        params = {"owner": person_owner(person_id), "person": person_id}
        keys = {"owner": placeholder("owner"), "person": placeholder("person")}
        return {name: await read(sql.format(**keys), params) for name, sql in COUNTS.items()}

    assert set((await counts(gone.id)).values()) == {1}
    assert await forget_person(world.services, people, gone.id) == 1
    assert set((await counts(gone.id)).values()) == {0}
    assert set((await counts(kept.id)).values()) == {1}
    assert await forget_person(world.services, people, gone.id) is None


async def test_sqlite_keeps_nothing_of_a_deleted_person(tmp_path: Path, clock: ManualClock) -> None:
    """SQLite: the file holds no job, print, voice, token, session or chat of the person."""
    path = tmp_path / "jobs.db"
    repo = await SqliteJobRepository.open(path, clock=clock)
    people = await SqlitePeopleStore.open(path, clock=clock)
    voices = await SqliteVoiceStore.open(path, clock=clock)

    async def read(sql: str, params: dict[str, Any]) -> int:
        with sqlite3.connect(path) as conn:
            [(count,)] = conn.execute(sql, params).fetchall()
        return int(count)

    try:
        await scenario(tmp_path, clock, repo, people, voices, read, lambda name: f":{name}")
    finally:
        for store in (repo, people, voices):
            await store.close()


async def test_postgres_keeps_nothing_of_a_deleted_person(
    tmp_path: Path, clock: ManualClock, pg_database: Database
) -> None:
    """PostgreSQL: the tables hold no job, print, voice, token, session or chat of the person."""
    repo = PostgresJobRepository(pg_database, clock=clock)
    people = PostgresPeopleStore(pg_database, clock=clock)
    voices = PostgresVoiceStore(pg_database)

    async def read(sql: str, params: dict[str, Any]) -> int:
        [(count,)] = await pg_database.fetchall(sql, params)
        return int(count)

    await scenario(tmp_path, clock, repo, people, voices, read, lambda name: f"%({name})s")
