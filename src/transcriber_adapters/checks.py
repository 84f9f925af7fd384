"""The job repository's argument checks, written once for memory, SQLite and PostgreSQL.

Each raises ``ValueError`` before the store touches anything: a caller's
mistake, not the database's state.
"""

from __future__ import annotations

from collections.abc import Sequence

from transcriber_core.entities import Job, JobPart
from transcriber_core.search import MAX_HITS


def check_edit(job: Job, seen: Job) -> None:
    """``save_if_unchanged`` compares an edit with the same job as it was read."""
    if job.id != seen.id:
        raise ValueError("an edit must be compared with the same job as it was read")


def check_page(limit: int, offset: int) -> None:
    """``list_jobs`` pages with a limit and an offset that are not negative."""
    if limit < 0 or offset < 0:
        raise ValueError("limit and offset must not be negative")


def check_parts(job_id: str, parts: Sequence[JobPart]) -> None:
    """``save_parts_if_held`` saves only parts of the job it is given."""
    if any(part.job_id != job_id for part in parts):
        raise ValueError("every part must belong to the job it is saved for")


def check_progress(seconds_done: float) -> None:
    """``save_progress_if_held`` notes a count of seconds, never a negative one."""
    if not seconds_done >= 0:
        raise ValueError("seconds_done must not be negative")


def check_search_limit(limit: int) -> None:
    """``search`` returns at least one hit and at most ``MAX_HITS``."""
    if not 1 <= limit <= MAX_HITS:
        raise ValueError(f"limit must be 1 to {MAX_HITS}")
