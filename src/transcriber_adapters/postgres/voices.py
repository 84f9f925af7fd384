"""``PostgresVoiceStore``: each owner's remembered voices on PostgreSQL (SPEC §25, ADR 72).

Every statement names the owner in its WHERE: another owner's voice is
never read. A sample is added in one transaction holding the voice's row
lock from the read of its print to the write, so two samples added at once
from any hosts both count.
"""

from __future__ import annotations

from datetime import datetime

from transcriber_adapters.postgres.connection import Database
from transcriber_adapters.sql.rows import print_from_db, print_to_db
from transcriber_adapters.sql.voices import VOICE_COLUMNS, voice_from_row, voice_print_from_row
from transcriber_core.entities import Print, Voice
from transcriber_core.prints import combined

_INSERT = (
    "INSERT INTO voices (id, owner, name, created, samples, vector)"
    " VALUES (%(id)s, %(owner)s, %(name)s, %(created)s, 1, %(vector)s)"
)
_PRINT = "SELECT vector FROM voices WHERE id = %(id)s AND owner = %(owner)s FOR UPDATE"
_ADD = (
    "UPDATE voices SET samples = samples + 1, vector = %(vector)s"
    f" WHERE id = %(id)s AND owner = %(owner)s RETURNING {VOICE_COLUMNS}"
)
_LIST = f"SELECT {VOICE_COLUMNS} FROM voices WHERE owner = %(owner)s ORDER BY created, id"
_PRINTS = f"SELECT {VOICE_COLUMNS}, vector FROM voices WHERE owner = %(owner)s ORDER BY created, id"
_RENAME = (
    "UPDATE voices SET name = %(name)s WHERE id = %(id)s AND owner = %(owner)s"
    f" RETURNING {VOICE_COLUMNS}"
)
_DELETE = "DELETE FROM voices WHERE id = %(id)s AND owner = %(owner)s"
_FORGET = "DELETE FROM voices WHERE owner = %(owner)s"


def _same(value: datetime) -> datetime:
    """``timestamptz`` arrives as an aware ``datetime`` already."""
    return value


class PostgresVoiceStore:
    """The ``voices`` table of a shared ``Database``."""

    def __init__(self, database: Database) -> None:
        """Use ``database``'s pool."""
        self._db = database

    async def add_voice(self, voice: Voice, vector: Print) -> None:
        """Keep ``voice`` with its first sample's print."""
        params = {
            "id": voice.id,
            "owner": voice.owner,
            "name": voice.name,
            "created": voice.created,
            "vector": print_to_db(vector),
        }
        await self._db.execute(_INSERT, params)

    async def add_sample(self, owner: str, voice_id: str, vector: Print) -> Voice | None:
        """The owner's voice with ``vector`` added and one more sample; None: no such voice."""
        key = {"id": voice_id, "owner": owner}
        async with self._db.transaction() as conn:
            cursor = await conn.execute(_PRINT, key)
            row = await cursor.fetchone()
            if row is None:
                return None
            total = print_to_db(combined(print_from_db(row[0]), vector))
            cursor = await conn.execute(_ADD, {**key, "vector": total})
            updated = await cursor.fetchone()
        return None if updated is None else voice_from_row(updated, _same)

    async def list_voices(self, owner: str) -> list[Voice]:
        """The owner's voices, oldest first."""
        rows = await self._db.fetchall(_LIST, {"owner": owner})
        return [voice_from_row(row, _same) for row in rows]

    async def rename_voice(self, owner: str, voice_id: str, name: str) -> Voice | None:
        """The owner's voice renamed; None: no such voice."""
        row = await self._db.fetchone(_RENAME, {"id": voice_id, "owner": owner, "name": name})
        return None if row is None else voice_from_row(row, _same)

    async def delete_voice(self, owner: str, voice_id: str) -> bool:
        """Delete the owner's voice and its print; False: there was none."""
        return await self._db.execute(_DELETE, {"id": voice_id, "owner": owner}) > 0

    async def voice_prints(self, owner: str) -> list[tuple[Voice, Print]]:
        """The owner's voices with their prints, oldest first."""
        rows = await self._db.fetchall(_PRINTS, {"owner": owner})
        return [voice_print_from_row(row, _same) for row in rows]

    async def forget_owner(self, owner: str) -> int:
        """Delete every voice of ``owner``; how many went."""
        return await self._db.execute(_FORGET, {"owner": owner})
