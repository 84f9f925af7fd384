"""A job another caller may not read is refused before its row is read (ADR 36, ADR 68).

The contract suite checks that ``get(..., anonymous=True)`` never finds a
person's job on an open API and ``get(..., owned_by=...)`` never another
token's; these check, per database, that the refusal does not read the
row: SQLite decides it in an (id, owner) index, PostgreSQL on the heap
tuple without touching the transcript kept out of line (TOAST). The
figures compared are the work the database reports, never a time.
"""

from __future__ import annotations

import json
import secrets
from pathlib import Path
from typing import Any

from transcriber_adapters.postgres import Database, PostgresJobRepository
from transcriber_adapters.postgres import statements as pg_sql
from transcriber_adapters.sqlite import SqliteJobRepository, connect
from transcriber_adapters.sqlite.statements import GET_ANONYMOUS_JOB_SQL, GET_OWNED_JOB_SQL
from transcriber_contracts.repository_support import T0, make_job
from transcriber_core.clocks import ManualClock
from transcriber_core.entities import Job, State, Word
from transcriber_core.people import PERSON_ID_LENGTH, PERSON_OWNER_PREFIX, person_owner

#: Words enough that the transcript cannot stay in the row (SQLite's overflow pages,
#: PostgreSQL's TOAST), random so that compression cannot bring it back in.
LONG = 20_000


def persons_job(words: int, owner: str | None = None) -> Job:
    """A done job of a person (or of ``owner``) with ``words`` random words."""
    said = tuple(
        Word(text=secrets.token_hex(6), start=i * 0.5, end=i * 0.5 + 0.4) for i in range(words)
    )
    return make_job(
        state=State.DONE,
        owner=owner or person_owner(secrets.token_hex(32)[:PERSON_ID_LENGTH]),
        text=" ".join(w.text for w in said),
        words=said,
    )


async def test_sqlite_decides_a_persons_job_in_the_covering_index(tmp_path: Path) -> None:
    """The owner is judged in (id, owner) alone; the row is read by rowid only after it passed."""
    path = tmp_path / "jobs.db"
    repo = await SqliteJobRepository.open(path, clock=ManualClock(T0))
    await repo.close()
    conn = connect(path)
    try:
        params = {"id": "some-id", "prefix": PERSON_OWNER_PREFIX}
        plan = conn.execute(f"EXPLAIN QUERY PLAN {GET_ANONYMOUS_JOB_SQL}", params).fetchall()
    finally:
        conn.close()
    details = [row[-1] for row in plan]
    assert "SEARCH jobs USING COVERING INDEX jobs_id_owner (id=?)" in details, details
    assert "SEARCH jobs USING INTEGER PRIMARY KEY (rowid=?)" in details, details
    assert not [d for d in details if d.startswith("SCAN")], details


async def test_sqlite_decides_another_owners_job_in_the_owner_index(tmp_path: Path) -> None:
    """A token's lookup searches (owner, id) with both: another owner's row is never visited."""
    path = tmp_path / "jobs.db"
    repo = await SqliteJobRepository.open(path, clock=ManualClock(T0))
    await repo.close()
    conn = connect(path)
    try:
        params = {"id": "some-id", "owner": "0" * 64}
        plan = conn.execute(f"EXPLAIN QUERY PLAN {GET_OWNED_JOB_SQL}", params).fetchall()
    finally:
        conn.close()
    details = [row[-1] for row in plan]
    assert details == ["SEARCH jobs USING INDEX jobs_owner_id (owner=? AND id=?)"], details


async def _buffers(
    database: Database, job_id: str, sql: str = pg_sql.GET_ANONYMOUS_JOB_SQL, **params: str
) -> tuple[int, int]:
    """Buffers the lookup of ``job_id`` (anonymous unless told) touched, and rows it returned."""
    explain = f"EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) {sql}"
    params = params or {"prefix": PERSON_OWNER_PREFIX}
    row = await database.fetchone(explain, {"id": job_id, **params})
    assert row is not None
    found: Any = row[0]
    plan = (json.loads(found) if isinstance(found, str) else found)[0]["Plan"]
    return plan["Shared Hit Blocks"] + plan["Shared Read Blocks"], plan["Actual Rows"]


async def test_postgres_refuses_a_persons_job_without_reading_its_transcript(
    pg_database: Database,
) -> None:
    """A person's long transcript costs the refusal no more buffers than a short one's."""
    repo = PostgresJobRepository(pg_database)
    long, short = persons_job(LONG), persons_job(2)
    for job in (long, short):
        await repo.create(job)
    toasted = await pg_database.fetchone(
        "SELECT pg_column_size(words) FROM jobs WHERE id = %(id)s", {"id": long.id}
    )
    assert toasted is not None
    assert toasted[0] > 8192, "the long transcript must live out of the row's page"
    long_cost, long_rows = await _buffers(pg_database, long.id)
    short_cost, short_rows = await _buffers(pg_database, short.id)
    assert (long_rows, short_rows) == (0, 0)
    assert long_cost == short_cost


async def test_postgres_refuses_another_owners_job_without_reading_its_transcript(
    pg_database: Database,
) -> None:
    """Another token's long transcript costs the refusal no more buffers than a short one's."""
    repo = PostgresJobRepository(pg_database)
    owner, other = "a" * 64, "b" * 64
    long, short = persons_job(LONG, owner), persons_job(2, owner)
    for job in (long, short):
        await repo.create(job)
    toasted = await pg_database.fetchone(
        "SELECT pg_column_size(words) FROM jobs WHERE id = %(id)s", {"id": long.id}
    )
    assert toasted is not None
    assert toasted[0] > 8192, "the long transcript must live out of the row's page"
    costs = [
        await _buffers(pg_database, job.id, pg_sql.GET_OWNED_JOB_SQL, owner=other)
        for job in (long, short)
    ]
    assert [rows for _, rows in costs] == [0, 0]
    assert costs[0][0] == costs[1][0]
