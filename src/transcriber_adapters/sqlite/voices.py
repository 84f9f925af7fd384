"""``SqliteVoiceStore``: each owner's remembered voices in the SQLite file (SPEC §25, ADR 72).

Every statement names the owner in its WHERE: another owner's voice is
never read. A sample is added in one ``BEGIN IMMEDIATE`` transaction (read
the sum, add, write), so two samples added at once both count.
"""

from __future__ import annotations

import sqlite3

from transcriber_adapters.sql.rows import print_from_db, print_to_db
from transcriber_adapters.sql.voices import VOICE_COLUMNS, voice_from_row, voice_print_from_row
from transcriber_adapters.sqlite.connection import SqliteStore
from transcriber_adapters.sqlite.schema import immediate, read, write, write_returning
from transcriber_adapters.sqlite.times import from_db, to_db
from transcriber_core.entities import Print, Voice
from transcriber_core.prints import combined

_INSERT = (
    "INSERT INTO voices (id, owner, name, created, samples, vector)"
    " VALUES (:id, :owner, :name, :created, 1, :vector)"
)
_PRINT = "SELECT vector FROM voices WHERE id = :id AND owner = :owner"
_ADD = (
    "UPDATE voices SET samples = samples + 1, vector = :vector"
    f" WHERE id = :id AND owner = :owner RETURNING {VOICE_COLUMNS}"
)
_LIST = f"SELECT {VOICE_COLUMNS} FROM voices WHERE owner = :owner ORDER BY created, id"
_PRINTS = f"SELECT {VOICE_COLUMNS}, vector FROM voices WHERE owner = :owner ORDER BY created, id"
_RENAME = (
    f"UPDATE voices SET name = :name WHERE id = :id AND owner = :owner RETURNING {VOICE_COLUMNS}"
)
_DELETE = "DELETE FROM voices WHERE id = :id AND owner = :owner"
_FORGET = "DELETE FROM voices WHERE owner = :owner"


class SqliteVoiceStore(SqliteStore):
    """The ``VoiceStore`` port on a SQLite file; ``await SqliteVoiceStore.open()`` makes one."""

    _what = "the voice store"

    async def add_voice(self, voice: Voice, vector: Print) -> None:
        """Keep ``voice`` with its first sample's print."""
        params = {
            "id": voice.id,
            "owner": voice.owner,
            "name": voice.name,
            "created": to_db(voice.created),
            "vector": print_to_db(vector),
        }
        await self._call(write, _INSERT, params)

    async def add_sample(self, owner: str, voice_id: str, vector: Print) -> Voice | None:
        """The owner's voice with ``vector`` added and one more sample; None: no such voice."""
        return await self._call(_add_sample, owner, voice_id, vector)

    async def list_voices(self, owner: str) -> list[Voice]:
        """The owner's voices, oldest first."""
        rows = await self._call(read, _LIST, {"owner": owner})
        return [voice_from_row(row, from_db) for row in rows]

    async def rename_voice(self, owner: str, voice_id: str, name: str) -> Voice | None:
        """The owner's voice renamed; None: no such voice."""
        params = {"id": voice_id, "owner": owner, "name": name}
        rows = await self._call(write_returning, _RENAME, params)
        return voice_from_row(rows[0], from_db) if rows else None

    async def delete_voice(self, owner: str, voice_id: str) -> bool:
        """Delete the owner's voice and its print; False: there was none."""
        return await self._call(write, _DELETE, {"id": voice_id, "owner": owner}) > 0

    async def voice_prints(self, owner: str) -> list[tuple[Voice, Print]]:
        """The owner's voices with their prints, oldest first."""
        rows = await self._call(read, _PRINTS, {"owner": owner})
        return [voice_print_from_row(row, from_db) for row in rows]

    async def forget_owner(self, owner: str) -> int:
        """Delete every voice of ``owner``; how many went."""
        return await self._call(write, _FORGET, {"owner": owner})


# The operations below run on the connection thread; each takes the connection first.


def _add_sample(conn: sqlite3.Connection, owner: str, voice_id: str, vector: Print) -> Voice | None:

    with immediate(conn):
        # Read under the write lock: a sample added at the same time waits for this one.
        row = conn.execute(_PRINT, {"id": voice_id, "owner": owner}).fetchone()
        if row is None:
            return None
        total = print_to_db(combined(print_from_db(row[0]), vector))
        rows = conn.execute(_ADD, {"id": voice_id, "owner": owner, "vector": total}).fetchall()
    return voice_from_row(rows[0], from_db)
