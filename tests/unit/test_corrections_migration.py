"""SQLite's migration 0019 (ADR 57): a done job from before it is correctable, its words intact."""

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
from transcriber_core.entities import Correction, State, Word

WORDS = (Word(text="hello", start=0.0, end=0.5), Word(text="wrld", start=0.6, end=1.0))


async def test_a_job_stored_before_0019_opens_uncorrected_and_takes_a_correction(
    tmp_path: Path,
) -> None:
    """Opening runs 0019: the old done job reads version 0, no original, and can be corrected."""
    path = tmp_path / "jobs.db"
    job = make_job(state=State.DONE, text="hello wrld", words=WORDS)
    conn = connect(path)
    try:
        migrate(conn, now=T0, migrations=[m for m in shipped_migrations() if m.version < 19])
        made = {row[1] for row in conn.execute("PRAGMA table_info(jobs)")}
        assert "edit_version" not in made
        params = {k: v for k, v in job_params(job).items() if k in made}
        columns, values = ", ".join(params), ", ".join(f":{k}" for k in params)
        conn.execute(f"INSERT INTO jobs ({columns}) VALUES ({values})", params)
    finally:
        conn.close()
    repo = await SqliteJobRepository.open(path)
    try:
        assert 19 in repo.applied_migrations
        old = await repo.get(job.id)
        assert (old.words, old.edit_version, old.original_text, old.original_words) == (
            WORDS,
            0,
            None,
            None,
        )
        fixed = Correction(
            text="hello world",
            words=(WORDS[0], Word(text="world", start=0.6, end=1.0)),
            original_text=old.text,
            original_words=old.words,
        )
        saved = await repo.save_correction(job.id, fixed, version=0)
        assert (saved.text, saved.original_words, saved.edit_version) == ("hello world", WORDS, 1)
    finally:
        await repo.close()
