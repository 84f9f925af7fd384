"""SQLite's search index (migration 0020, ADR 58): filled for old jobs, emptied of deleted ones."""

from __future__ import annotations

from pathlib import Path

from transcriber_adapters.sqlite import (
    SqliteJobRepository,
    connect,
    job_params,
    migrate,
    shipped_migrations,
)
from transcriber_contracts.repository_support import T0, make_job
from transcriber_contracts.search import ALICE
from transcriber_core.entities import State
from transcriber_core.search import SearchQuery


async def test_done_jobs_stored_before_0020_are_indexed_by_it(tmp_path: Path) -> None:
    """Opening runs 0020: an old done job is found, an old running job is not, until it is done."""
    path = tmp_path / "jobs.db"
    old_done = make_job(state=State.DONE, owner=ALICE, text="an old albatross", ended=T0)
    old_running = make_job(state=State.CHECK, owner=ALICE, text="a running albatross")
    conn = connect(path)
    try:
        migrate(conn, now=T0, migrations=[m for m in shipped_migrations() if m.version < 20])
        made = {row[1] for row in conn.execute("PRAGMA table_info(jobs)")}
        for job in (old_done, old_running):
            params = {k: v for k, v in job_params(job).items() if k in made}
            columns, values = ", ".join(params), ", ".join(f":{k}" for k in params)
            conn.execute(f"INSERT INTO jobs ({columns}) VALUES ({values})", params)
    finally:
        conn.close()
    repo = await SqliteJobRepository.open(path)
    try:
        assert 20 in repo.applied_migrations
        hits = await repo.search(ALICE, SearchQuery.parse("albatross"))
        assert [hit.job_id for hit in hits] == [old_done.id]
        assert hits[0].at is None  # text only: no words were stored
    finally:
        await repo.close()


async def test_a_deleted_transcripts_words_leave_the_search_index(tmp_path: Path) -> None:
    """After a delete, no segment of FTS5 keeps the transcript's words, nor does the WAL."""
    repo = await SqliteJobRepository.open(tmp_path / "jobs.db")
    try:
        kept = make_job(state=State.DONE, owner=ALICE, text="ordinary words", ended=T0)
        gone = make_job(state=State.DONE, owner=ALICE, text="zanzibarquux secretword", ended=T0)
        for job in (kept, gone):
            await repo.create(job)
        await repo.delete_job(gone.id)
        assert [hit.job_id for hit in await repo.search(ALICE, SearchQuery.parse("ordinary"))] == [
            kept.id
        ]
    finally:
        await repo.close()
    stored = b"".join(path.read_bytes() for path in tmp_path.iterdir())
    assert b"zanzibarquux" not in stored
    assert b"secretword" not in stored
