"""``MemoryVoiceStore``: each owner's remembered voices in a dict (SPEC §25, ADR 72)."""

from __future__ import annotations

import attrs

from transcriber_adapters.memory.database import MemoryDatabase, database_for
from transcriber_core.entities import Print, Voice
from transcriber_core.ports import Clock
from transcriber_core.prints import combined


class MemoryVoiceStore:
    """The voice store in memory; the database's lock makes each method one step."""

    def __init__(
        self, clock: Clock | None = None, *, database: MemoryDatabase | None = None
    ) -> None:
        self._db = database_for(clock, database)

    @property
    def database(self) -> MemoryDatabase:
        """The data this store works on; give it to another store to share it."""
        return self._db

    def reset(self) -> None:
        """Forget every voice."""
        with self._db.lock:
            self._db.voices.clear()

    def _owned(self, owner: str, voice_id: str) -> tuple[Voice, Print] | None:
        found = self._db.voices.get(voice_id)
        return found if found is not None and found[0].owner == owner else None

    async def add_voice(self, voice: Voice, vector: Print) -> None:
        """Keep ``voice`` with its first sample's print."""
        with self._db.lock:
            self._db.voices[voice.id] = (attrs.evolve(voice, samples=1), tuple(vector))

    async def add_sample(self, owner: str, voice_id: str, vector: Print) -> Voice | None:
        """The owner's voice with ``vector`` added and one more sample; None: no such voice."""
        with self._db.lock:
            found = self._owned(owner, voice_id)
            if found is None:
                return None
            voice = attrs.evolve(found[0], samples=found[0].samples + 1)
            self._db.voices[voice_id] = (voice, combined(found[1], vector))
            return voice

    async def list_voices(self, owner: str) -> list[Voice]:
        """The owner's voices, oldest first."""
        with self._db.lock:
            mine = [voice for voice, _ in self._db.voices.values() if voice.owner == owner]
        return sorted(mine, key=lambda voice: (voice.created, voice.id))

    async def rename_voice(self, owner: str, voice_id: str, name: str) -> Voice | None:
        """The owner's voice renamed; None: no such voice."""
        with self._db.lock:
            found = self._owned(owner, voice_id)
            if found is None:
                return None
            voice = attrs.evolve(found[0], name=name)
            self._db.voices[voice_id] = (voice, found[1])
            return voice

    async def delete_voice(self, owner: str, voice_id: str) -> bool:
        """Delete the owner's voice and its print; False: there was none."""
        with self._db.lock:
            if self._owned(owner, voice_id) is None:
                return False
            del self._db.voices[voice_id]
            return True

    async def voice_prints(self, owner: str) -> list[tuple[Voice, Print]]:
        """The owner's voices with their prints, oldest first."""
        with self._db.lock:
            mine = [pair for pair in self._db.voices.values() if pair[0].owner == owner]
        return sorted(mine, key=lambda pair: (pair[0].created, pair[0].id))

    async def forget_owner(self, owner: str) -> int:
        """Delete every voice of ``owner``; how many went."""
        with self._db.lock:
            gone = [key for key, (voice, _) in self._db.voices.items() if voice.owner == owner]
            for key in gone:
                del self._db.voices[key]
            return len(gone)
