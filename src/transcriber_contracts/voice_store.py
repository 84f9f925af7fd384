"""The contract every VoiceStore adapter passes: one owner's voices only, samples that add, races.

Use it from your own tests::

    class TestMyVoiceStore(VoiceStoreContract):
        @pytest.fixture
        async def voices(self, clock, tmp_path):
            store = await MyStore.open(tmp_path / "voices.db", clock=clock)
            yield store
            await store.close()

        @pytest.fixture
        def open_voices(self, voices, clock, tmp_path):
            async def another():
                store = await MyStore.open(tmp_path / "voices.db", clock=clock)
                return store, store.close

            return another

``voices`` must yield a fresh, empty store; ``open_voices`` opens one more
independent store on the same database, as another process would, with the
function that closes it (the race test calls it in threads of its own).
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta

import pytest

from transcriber_contracts.racing import in_threads
from transcriber_core.clocks import ManualClock
from transcriber_core.entities import Print, Voice
from transcriber_core.ports import VoiceStore

#: The suite's "now".
T0 = datetime(2026, 12, 5, 12, 0, 0, 123457, tzinfo=UTC)
#: Two owners: a person and a static token's digest.
ALICE = "person:" + "a" * 57
TOKEN = "b" * 64
#: Opens one more store on the suite's database: the store and how to close it.
OpenVoices = Callable[[], Awaitable[tuple[VoiceStore, Callable[[], Awaitable[None]]]]]
#: Threads in the race.
RACERS = 4


def voice(voice_id: str, owner: str = ALICE, *, name: str = "Diane", minutes: int = 0) -> Voice:
    """A voice made ``minutes`` after ``T0``."""
    return Voice(
        id=voice_id, owner=owner, name=name, created=T0 + timedelta(minutes=minutes), samples=1
    )


def axis(index: int, dims: int = 4) -> Print:
    """A unit print along one axis."""
    return tuple(1.0 if i == index else 0.0 for i in range(dims))


class VoiceStoreContract:
    """Subclass and provide the fixtures ``voices`` and ``open_voices`` (module docstring)."""

    @pytest.fixture
    def clock(self) -> ManualClock:
        """The store's clock; the adapter's fixtures build their stores on it."""
        return ManualClock(T0)

    async def test_a_voice_is_listed_to_its_owner_only(self, voices: VoiceStore) -> None:
        """A voice kept for one owner is listed, oldest first, to that owner and nobody else."""
        await voices.add_voice(voice("v2", minutes=1, name="Bob"), axis(1))
        await voices.add_voice(voice("v1"), axis(0))
        await voices.add_voice(voice("v3", TOKEN, name="Eve"), axis(2))
        assert [v.id for v in await voices.list_voices(ALICE)] == ["v1", "v2"]
        assert await voices.list_voices(TOKEN) == [voice("v3", TOKEN, name="Eve")]
        assert await voices.list_voices("person:" + "c" * 57) == []

    async def test_prints_come_back_for_matching(self, voices: VoiceStore) -> None:
        """``voice_prints`` gives the owner's voices with the prints kept, exactly."""
        vector = (0.6, -0.8, 0.0, 1e-7)
        await voices.add_voice(voice("v1"), vector)
        await voices.add_voice(voice("v9", TOKEN), axis(3))
        assert await voices.voice_prints(ALICE) == [(voice("v1"), vector)]

    async def test_a_sample_adds_to_the_print(self, voices: VoiceStore) -> None:
        """Another sample counts one more and adds its unit print to the voice's sum."""
        await voices.add_voice(voice("v1"), axis(0))
        added = await voices.add_sample(ALICE, "v1", (0.0, 2.0, 0.0, 0.0))
        assert added == Voice(id="v1", owner=ALICE, name="Diane", created=T0, samples=2)
        [(_, vector)] = await voices.voice_prints(ALICE)
        assert vector == pytest.approx((1.0, 1.0, 0.0, 0.0))

    async def test_no_sample_for_another_owner(self, voices: VoiceStore) -> None:
        """Another owner cannot add to a voice, nor to an unknown one: None, nothing changed."""
        await voices.add_voice(voice("v1"), axis(0))
        assert await voices.add_sample(TOKEN, "v1", axis(1)) is None
        assert await voices.add_sample(ALICE, "nope", axis(1)) is None
        assert await voices.voice_prints(ALICE) == [(voice("v1"), axis(0))]

    async def test_rename_by_its_owner_only(self, voices: VoiceStore) -> None:
        """The owner renames a voice; another owner's rename finds nothing and changes nothing."""
        await voices.add_voice(voice("v1"), axis(0))
        assert await voices.rename_voice(TOKEN, "v1", "Mallory") is None
        renamed = await voices.rename_voice(ALICE, "v1", "Diane Lee")
        assert renamed == voice("v1", name="Diane Lee")
        assert await voices.list_voices(ALICE) == [renamed]

    async def test_delete_by_its_owner_only(self, voices: VoiceStore) -> None:
        """Only the owner deletes a voice; it is gone with its print, and gone once."""
        await voices.add_voice(voice("v1"), axis(0))
        assert not await voices.delete_voice(TOKEN, "v1")
        assert await voices.delete_voice(ALICE, "v1")
        assert not await voices.delete_voice(ALICE, "v1")
        assert await voices.voice_prints(ALICE) == []

    async def test_forget_owner_deletes_theirs_alone(self, voices: VoiceStore) -> None:
        """Forgetting an owner deletes every voice of theirs and no one else's."""
        await voices.add_voice(voice("v1"), axis(0))
        await voices.add_voice(voice("v2", minutes=1), axis(1))
        await voices.add_voice(voice("v3", TOKEN), axis(2))
        assert await voices.forget_owner(ALICE) == 2
        assert await voices.list_voices(ALICE) == []
        assert [v.id for v in await voices.list_voices(TOKEN)] == ["v3"]

    async def test_samples_added_at_once_all_count(
        self, voices: VoiceStore, open_voices: OpenVoices
    ) -> None:
        """Samples added by several processes at once each count and each add to the print."""
        await voices.add_voice(voice("v1"), axis(0))

        async def racer(n: int, ready: Callable[[], object]) -> Voice | None:
            store, close = await open_voices()
            try:
                ready()
                return await store.add_sample(ALICE, "v1", axis(1 + n % 3))
            finally:
                await close()

        added = in_threads(RACERS, racer)
        assert sorted(v.samples for v in added if v is not None) == [2, 3, 4, 5]
        [(kept, vector)] = await voices.voice_prints(ALICE)
        assert kept.samples == 1 + RACERS
        assert math.fsum(vector) == pytest.approx(1 + RACERS)
