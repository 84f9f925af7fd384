"""One long recording on every CPU, a voice note still first (SPEC §13, §25; ADR 89).

Real worker loops (``Workers``) on the memory adapters: the recognizer and
the diarizer hold each call until the test lets them go, so what runs at
once is read from the calls inside them, never from timing.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta
from pathlib import Path

import attrs
import pytest

from tests.support.delegate import Delegate
from tests.support.world import World, make_world
from transcriber_adapters.memory.diarizer import MemoryDiarizer
from transcriber_core.entities import Diarization, FileRecord, State, Turn, Word
from transcriber_core.languages import DEFAULT_REQUEST, RecognitionRequest
from transcriber_core.policy import DecodeLimits, Settings, general_loops
from transcriber_core.ports import (
    Event,
    ProgressCallback,
    Recognized,
    RecognizerLimits,
    Silence,
    Started,
)
from transcriber_core.worker import Workers

#: 100 bytes and 60 seconds at most ride the express lane; parts of 60 s at most.
LANES = Settings(
    express_bytes=100,
    express_duration=timedelta(seconds=60),
    idle_poll_interval=timedelta(hours=1),
)
LONG, SHORT = b"l" * 200, b"s" * 50


class HeldRecognizer(Delegate):
    """Recognises within ``start`` as Whisper does; a part (over 30 s) waits for ``release``."""

    def __init__(self, inner: object) -> None:
        super().__init__(inner)
        self.release = asyncio.Event()
        #: "part" or "short" for each start, in the order they began.
        self.order: list[str] = []
        self.changed = asyncio.Condition()

    async def start(
        self,
        audio: FileRecord,
        *,
        duration: float | None,
        request: RecognitionRequest = DEFAULT_REQUEST,
        on_progress: ProgressCallback | None = None,
    ) -> Started:
        kind = "part" if duration is not None and duration > 30 else "short"
        async with self.changed:
            self.order.append(kind)
            self.changed.notify_all()
        if kind == "part":
            await self.release.wait()
        words = (Word(text=kind, start=1.0, end=2.0), Word(text="words", start=20.0, end=21.0))
        outcome = Recognized(text=f"{kind} words", words=words)
        return Started(operation_id=kind, outcome=outcome)

    async def wait_for(self, kind: str, count: int) -> None:
        async with asyncio.timeout(10), self.changed:
            await self.changed.wait_for(lambda: self.order.count(kind) >= count)


class HeldDiarizer:
    """The memory diarizer, held inside each call until ``release``."""

    def __init__(self, turns: tuple[Turn, ...]) -> None:
        self.inner = MemoryDiarizer(turns)
        self.entered = asyncio.Event()
        self.release = asyncio.Event()

    async def diarize(self, audio: Path, *, speakers: int | None) -> Diarization:
        self.entered.set()
        await self.release.wait()
        return await self.inner.diarize(audio, speakers=speakers)


@pytest.fixture
def world(tmp_path: Path) -> World:
    """150 s recordings cut in silences into three parts; a tiny file may last minutes."""
    world = make_world(tmp_path, settings=LANES)
    world.converter.duration = 150.0
    world.converter.limits = DecodeLimits(min_bytes_per_second=0.01)
    world.converter.silences = (Silence(start=50, end=51), Silence(start=100, end=102))
    world.recognizer.limits = RecognizerLimits(max_seconds=60)
    return world


async def test_two_parts_and_the_speakers_run_at_once_and_a_voice_note_goes_first(
    world: World,
) -> None:
    """Two general loops take two parts of one recording, the diarizer hears it meanwhile,
    and a voice note sent then starts in the express loop before the third part."""
    recognizer = HeldRecognizer(world.services.recognizer)
    turns = (Turn(speaker="a", start=0, end=60), Turn(speaker="b", start=60, end=150))
    diarizer = HeldDiarizer(turns)
    world.services = attrs.evolve(world.services, recognizer=recognizer, diarizer=diarizer)
    workers = Workers(world.services, {State.CONVERT: 2, State.RECOGNIZE: 3, State.CHECK: 1})
    assert general_loops(3) == 2
    workers.start()
    try:
        long = await world.submit(LONG, speakers_wanted=0)
        await recognizer.wait_for("part", 2)
        async with asyncio.timeout(10):
            await diarizer.entered.wait()
        # Two parts and the speakers at once; the third part waits for a loop.
        assert recognizer.order == ["part", "part"]
        world.converter.duration = 10.0
        note = await world.submit(SHORT)
        async with asyncio.timeout(10):
            await world.notifier.wait_for(note.id, Event.DONE)
        assert recognizer.order == ["part", "part", "short"]
        diarizer.release.set()
        recognizer.release.set()
        async with asyncio.timeout(10):
            await world.notifier.wait_for(long.id, Event.DONE)
        assert recognizer.order == ["part", "part", "short", "part"]
        done = await world.repo.get(long.id)
        assert done.state is State.DONE, done.error
        # The words are labelled with what was heard beside the parts; nothing is kept of it.
        assert [w.speaker for w in done.words] == ["S1", "S1", "S1", "S2", "S2", "S2"]
        assert done.heard is None
        assert len(diarizer.inner.calls) == 1
    finally:
        recognizer.release.set()
        diarizer.release.set()
        await workers.drain(grace=1)


async def test_speakers_heard_before_the_last_part_are_kept_with_the_job(world: World) -> None:
    """The check step hears the speakers while parts are left, and saves them with the job."""
    turns = (Turn(speaker="x", start=0, end=150),)
    world.services = attrs.evolve(world.services, diarizer=MemoryDiarizer(turns))
    job = await world.submit(LONG, speakers_wanted=1)
    await world.step(State.CONVERT)
    planned = await world.step(State.RECOGNIZE)
    assert planned is not None
    assert planned.state is State.CHECK
    assert planned.delay_time == world.clock.now()  # due at once: heard beside the parts
    waiting = await world.step(State.CHECK)
    assert waiting is not None
    assert waiting.state is State.CHECK
    stored = await world.repo.get(job.id)
    assert stored.heard is not None
    assert stored.heard.turns == turns
    done = await world.run_to_end(job.id)
    assert done.state is State.DONE, done.error
    assert done.heard is None
    assert {w.speaker for w in done.words} == {"S1"}
