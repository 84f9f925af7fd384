"""The deletion plan both SQL dialects run: which jobs go, and which file records with them.

A deletion (``delete_job``) or a retention batch first selects its jobs as
rows of id and three file ids, then their parts' two file ids; these
functions say what that selection deletes. Each dialect then runs its own
statements in the same transaction: the file records' DELETE ... RETURNING
(each record goes to one caller), then the jobs' DELETE (parts and
deliveries cascade) or, keeping the jobs, the UPDATEs that forget their files.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any


def job_ids_of(rows: Sequence[Sequence[Any]]) -> list[str]:
    """The ids of the selected jobs (each row: id, then its file ids)."""
    return [row[0] for row in rows]


def file_ids_of(rows: Sequence[Sequence[Any]], part_rows: Iterable[Sequence[Any]]) -> list[str]:
    """The file ids the jobs in ``rows`` and their parts (rows of file ids) hold, sorted, once."""
    file_ids = {file_id for row in rows for file_id in row[1:] if file_id is not None}
    for part_row in part_rows:
        file_ids.update(file_id for file_id in part_row if file_id is not None)
    return sorted(file_ids)
