"""An open API's read of a person's job is refused before the row is read (red team 4, ADR 68).

The contract suite checks that ``get(..., anonymous=True)`` never finds a
person's job; these check, per database, that the refusal does not read the
row: SQLite decides it in the (id, owner) index, PostgreSQL on the heap
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
from transcriber_adapters.sqlite.statements import GET_ANONYMOUS_JOB_SQL
from transcriber_contracts.repository_support import T0, make_job
from transcriber_core.clocks import ManualClock
from transcriber_core.entities import Job, State, Word
from transcriber_core.people import PERSON_ID_LENGTH, PERSON_OWNER_PREFIX, person_owner

#: Words enough that the transcript cannot stay in the row (SQLite's overflow pages,
#: PostgreSQL's TOAST), random so that compression cannot bring it back in.
LONG = 20_000


def persons_job(words: int) -> Job:
    """A done job of a person with ``words`` random words."""
    said = tuple(
        Word(text=secrets.token_hex(6), start=i * 0.5, end=i * 0.5 + 0.4) for i in range(words)
    )
    return make_job(
        state=State.DONE,
        owner=person_owner(secrets.token_hex(32)[:PERSON_ID_LENGTH]),
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


async def _buffers(database: Database, job_id: str) -> tuple[int, int]:
    """Buffers the anonymous lookup of ``job_id`` touched, and the rows it returned."""
    explain = f"EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) {pg_sql.GET_ANONYMOUS_JOB_SQL}"
    row = await database.fetchone(explain, {"id": job_id, "prefix": PERSON_OWNER_PREFIX})
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
