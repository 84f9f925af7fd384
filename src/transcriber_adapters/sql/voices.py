"""What SQLite's and PostgreSQL's voice stores share: the columns and the row mapping (ADR 72).

Each dialect keeps its statements and its transaction; a voice's print is
JSON text in both (``rows.print_to_db``), read back only by ``voice_prints``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any, LiteralString

from transcriber_adapters.sql.rows import print_from_db
from transcriber_core.entities import Print, Voice

#: What every statement that reads a voice selects, in this order; never its print.
VOICE_COLUMNS: LiteralString = "id, owner, name, created, samples"


def voice_from_row(row: Sequence[Any], time_from_db: Callable[[Any], datetime]) -> Voice:
    """The voice of a row selected as ``VOICE_COLUMNS``."""
    id_, owner, name, created, samples = row[:5]
    return Voice(id=id_, owner=owner, name=name, created=time_from_db(created), samples=samples)


def voice_print_from_row(
    row: Sequence[Any], time_from_db: Callable[[Any], datetime]
) -> tuple[Voice, Print]:
    """The voice and its print of a row selected as ``VOICE_COLUMNS, vector``."""
    return voice_from_row(row, time_from_db), print_from_db(row[5])
