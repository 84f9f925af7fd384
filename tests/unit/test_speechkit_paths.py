"""The pipeline on the real SpeechKit adapter against the fake: sync, async, fallback, quotas.

The steps and the worker run on memory adapters (``tests.support.world``);
the recognizer is the real ``YandexRecognizer`` over real HTTP to the fake
SpeechKit, and the Object Storage is a bucket stand-in that records what
it holds (the service test uses moto for that).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import attrs
import pytest

from tests.support.fake_speechkit import API_KEY, FakeSpeechKit
from tests.support.world import World, make_world
from transcriber_adapters.memory import MemoryBudgetStore, MemoryFileStore
from transcriber_adapters.memory.diarizer import MemoryDiarizer
from transcriber_adapters.yandex import YandexRecognizer
from transcriber_core.entities import AUTO_SPEAKERS, FileRecord, Location, State, Turn
from transcriber_core.policy import Settings
from transcriber_core.worker import acquire_next, process


class Bucket(MemoryFileStore):
    """Object Storage in memory: records carry an object key, as the S3 store's do."""

    @property
    def location(self) -> Location:
        return Location.S3

    async def put(
        self, file_id: str, extension: str, source: Path, *, now: datetime, move: bool = False
    ) -> FileRecord:
        record = await super().put(file_id, extension, source, now=now, move=move)
        return attrs.evolve(
            record, location=Location.S3, object_key=f"transcriber/{file_id}{extension}"
        )


def clip(seconds: float, tag: int = 0) -> bytes:
    """Recording bytes the memory converter takes as ``seconds`` of audio (its size floor)."""
    return f"RIFF clip {tag} ".encode() + bytes(int(seconds * 200))


@pytest.fixture
async def fake() -> AsyncIterator[FakeSpeechKit]:
    async with FakeSpeechKit() as server:
        yield server


MakeWorld = Callable[..., tuple[World, Bucket]]


@pytest.fixture
async def speechkit_world(tmp_path: Path, fake: FakeSpeechKit) -> AsyncIterator[MakeWorld]:
    """Makes worlds whose recognizer is SpeechKit's adapter on the fake; closes them after."""
    made: list[YandexRecognizer] = []

    def make(**options: object) -> tuple[World, Bucket]:
        world, bucket = _speechkit_world(tmp_path, fake, **options)
        assert isinstance(world.services.recognizer, YandexRecognizer)
        made.append(world.services.recognizer)
        return world, bucket

    yield make
    for recognizer in made:
        await recognizer.close()


def _speechkit_world(
    tmp_path: Path, fake: FakeSpeechKit, *, files_on_bucket: bool = False, **options: object
) -> tuple[World, Bucket]:
    """A world whose recognizer is SpeechKit's adapter on the fake, sync path on.

    With ``files_on_bucket`` every file lives in the bucket SpeechKit reads
    (``[storage] files = "s3"``, ADR 33), and there is no store for copies.
    """
    bucket = Bucket()
    # One clock for the world, its stores and the budgets (ADR 30).
    clock = options.pop("clock", None)
    if files_on_bucket:
        world = make_world(tmp_path, files=bucket, clock=clock)  # type: ignore[arg-type]
    else:
        world = make_world(tmp_path, recognizer_files=bucket, clock=clock)  # type: ignore[arg-type]
    options.setdefault("budgets", MemoryBudgetStore(world.clock))
    # The path tests below were written on v2 and keep it; the v3 tests ask for v3 (ADR 54).
    options.setdefault("async_api", "v2")
    recognizer = YandexRecognizer(
        api_key=API_KEY,
        bucket="b",
        stt_url=fake.stt_url,
        operation_url=fake.operation_url,
        v3_url=fake.v3_url,
        sync_url=fake.sync_url,
        files=world.files,
        **options,  # type: ignore[arg-type]
    )
    world.services = attrs.evolve(world.services, recognizer=recognizer)
    return world, bucket


async def test_short_clip_is_done_through_the_sync_api(
    speechkit_world: MakeWorld, fake: FakeSpeechKit
) -> None:
    """A 10 s clip goes to v1 and is done in the recognize step: no copy, operation or check."""
    world, bucket = speechkit_world()
    world.converter.duration = 10.0
    fake.finish_next("короткая заметка")
    job = await world.submit(clip(10))
    await world.step(State.CONVERT)
    done = await world.step(State.RECOGNIZE)
    assert done is not None
    assert done.state is State.DONE
    assert done.text == "короткая заметка"
    assert done.storage_file_id is None
    assert [r.path for r in fake.requests] == ["/speech/v1/stt:recognize"]
    assert bucket.names() == []
    assert bucket.calls == []
    assert (await world.repo.get(job.id)).state is State.DONE


async def test_two_minute_clip_takes_the_async_path(
    speechkit_world: MakeWorld, fake: FakeSpeechKit
) -> None:
    """A 2 min clip is copied, started and checked (v2); the copy is gone once it is done."""
    world, bucket = speechkit_world()
    world.converter.duration = 120.0
    fake.finish_next("длинная запись", pending_checks=1)
    job = await world.submit(clip(120))
    done = await world.run_to_end(job.id)
    assert done.state is State.DONE
    assert done.text == "длинная запись"
    paths = [r.path for r in fake.requests]
    assert paths[0] == "/speech/stt/v2/longRunningRecognize"
    assert "/speech/v1/stt:recognize" not in paths
    assert bucket.names() == []
    assert any(call.method == "put" for call in bucket.calls)


async def test_sync_refusal_for_size_falls_back_to_async(
    speechkit_world: MakeWorld, fake: FakeSpeechKit
) -> None:
    """The sync API's 400 for > its size limit sends the job async in the same step; not failed."""
    world, _ = speechkit_world()
    world.converter.duration = 10.0
    fake.sync_max_bytes = 10
    fake.finish_next("запасной путь")
    job = await world.submit(clip(10))
    await world.step(State.CONVERT)
    checking = await world.step(State.RECOGNIZE)
    assert checking is not None
    assert checking.state is State.CHECK
    assert checking.error is None
    assert checking.storage_file_id is not None
    done = await world.run_to_end(job.id)
    assert done.state is State.DONE
    assert done.text == "запасной путь"
    assert [r.path for r in fake.requests][:2] == [
        "/speech/v1/stt:recognize",
        "/speech/stt/v2/longRunningRecognize",
    ]


async def test_files_on_the_bucket_are_started_without_a_copy(
    speechkit_world: MakeWorld, fake: FakeSpeechKit
) -> None:
    """With files on SpeechKit's bucket, v2 reads the converted object; it is kept when done."""
    world, bucket = speechkit_world(files_on_bucket=True)
    world.converter.duration = 120.0
    fake.finish_next("из основного хранилища", pending_checks=1)
    job = await world.submit(clip(120))
    done = await world.run_to_end(job.id)
    assert done.state is State.DONE
    assert done.text == "из основного хранилища"
    assert done.storage_file_id is None
    converted = await world.repo.get_file(done.converted_file_id or "")
    assert converted.object_key is not None
    [start] = fake.requests_to("/speech/stt/v2")
    assert start.body["audio"]["uri"].endswith("/b/" + converted.object_key)
    puts = [call.name for call in bucket.calls if call.method == "put"]
    assert len(puts) == 2  # the recording and its converted audio: no copy
    assert not any(call.method == "delete" for call in bucket.calls)
    assert await bucket.exists(converted)


async def test_short_clip_on_the_bucket_is_read_for_the_sync_api(
    speechkit_world: MakeWorld, fake: FakeSpeechKit
) -> None:
    """With files on the bucket, a 10 s clip is still sent to v1, its bytes read from the bucket."""
    world, bucket = speechkit_world(files_on_bucket=True)
    world.converter.duration = 10.0
    fake.finish_next("коротко")
    job = await world.submit(clip(10))
    done = await world.run_to_end(job.id)
    assert done.state is State.DONE
    assert done.text == "коротко"
    assert [r.path for r in fake.requests] == ["/speech/v1/stt:recognize"]
    assert any(call.method == "open" for call in bucket.calls)


async def test_sync_refusal_on_the_bucket_starts_async_in_the_same_call(
    speechkit_world: MakeWorld, fake: FakeSpeechKit
) -> None:
    """With files on the bucket, v1's 400 for size is followed by v2 on the same object, no copy."""
    world, bucket = speechkit_world(files_on_bucket=True)
    world.converter.duration = 10.0
    fake.sync_max_bytes = 10
    fake.finish_next("запасной путь")
    job = await world.submit(clip(10))
    await world.step(State.CONVERT)
    checking = await world.step(State.RECOGNIZE)
    assert checking is not None
    assert checking.state is State.CHECK
    assert checking.storage_file_id is None
    assert [r.path for r in fake.requests] == [
        "/speech/v1/stt:recognize",
        "/speech/stt/v2/longRunningRecognize",
    ]
    assert len([call for call in bucket.calls if call.method == "put"]) == 2
    assert (await world.run_to_end(job.id)).text == "запасной путь"


async def test_a_job_waiting_for_the_start_budget_is_not_copied_again(
    speechkit_world: MakeWorld, fake: FakeSpeechKit
) -> None:
    """A job that found the start budget empty waits without an attempt and reuses its copy."""
    world, bucket = speechkit_world(starts_per_hour=1)
    world.converter.duration = 120.0
    first = await world.submit(clip(120, 1))
    second = await world.submit(clip(120, 2))
    await world.step(State.CONVERT)
    await world.step(State.CONVERT)
    assert (await world.step(State.RECOGNIZE)) is not None
    waiting = await world.step(State.RECOGNIZE)
    assert waiting is not None
    assert waiting.state is State.RECOGNIZE
    assert waiting.attempts == 0
    # The token is an hour away and promised to this job (ADR 61): it waits for it whole,
    # past the condition cap, and is not taken again before.
    assert waiting.delay_time == world.clock.now() + timedelta(hours=1)
    puts = [call for call in bucket.calls if call.method == "put"]
    assert len(puts) == 2
    for job_id in (first.id, second.id):
        assert (await world.run_to_end(job_id)).state is State.DONE
    assert len([call for call in bucket.calls if call.method == "put"]) == 2
    assert len(fake.requests_to("/speech/stt/v2")) == 2


DIALOGUE = [("0", "Добрый день, Диана."), ("1", "Здравствуйте!"), ("0", "До встречи.")]


async def test_v3_short_clip_with_speakers_takes_the_async_path(
    speechkit_world: MakeWorld, fake: FakeSpeechKit
) -> None:
    """A 10 s clip that wants speakers skips v1 (no speakers there): v3 labels them, no diarizer."""
    world, bucket = speechkit_world(async_api="v3")
    twin = MemoryDiarizer([Turn(speaker="x", start=0.0, end=100.0)])
    world.services = attrs.evolve(world.services, diarizer=twin)
    world.converter.duration = 10.0
    fake.finish_next_dialogue(DIALOGUE)
    job = await world.submit(clip(10), speakers_wanted=AUTO_SPEAKERS)
    done = await world.run_to_end(job.id)
    assert done.state is State.DONE
    assert done.text == "Добрый день, Диана. Здравствуйте! До встречи."
    assert [s.id for s in done.speakers] == ["S1", "S2"]
    assert [w.speaker for w in done.words] == ["S1"] * 3 + ["S2"] + ["S1"] * 2
    assert done.language == "ru"
    paths = [r.path for r in fake.requests]
    assert "/speech/v1/stt:recognize" not in paths
    assert paths[0] == "/stt/v3/recognizeFileAsync"
    assert fake.requests[0].body["speakerLabeling"] == {
        "speakerLabeling": "SPEAKER_LABELING_ENABLED"
    }
    assert "/stt/v3/getRecognition" in paths
    assert twin.calls == []
    assert any(call.method == "put" for call in bucket.calls)
    assert bucket.names() == []


async def test_v3_short_clip_without_speakers_still_goes_sync(
    speechkit_world: MakeWorld, fake: FakeSpeechKit
) -> None:
    """Speakers off: a short clip keeps the v1 sync path on a v3 deployment."""
    world, _ = speechkit_world(async_api="v3")
    world.converter.duration = 10.0
    fake.finish_next("короткая заметка")
    job = await world.submit(clip(10))
    done = await world.run_to_end(job.id)
    assert done.state is State.DONE
    assert [r.path for r in fake.requests] == ["/speech/v1/stt:recognize"]


async def test_v3_auto_language_and_no_speakers_asked(
    speechkit_world: MakeWorld, fake: FakeSpeechKit
) -> None:
    """A long clip on auto is detected (English here); unasked speakers leave no labels."""
    world, _ = speechkit_world(async_api="v3")
    world.converter.duration = 120.0
    fake.finish_next_dialogue([("0", "Good morning."), ("1", "Morning!")], language="en-US")
    job = await world.submit(clip(120))
    done = await world.run_to_end(job.id)
    assert done.state is State.DONE
    assert done.language == "en"
    assert done.text == "Good morning. Morning!"
    assert done.speakers == ()
    assert all(w.speaker is None for w in done.words)
    assert "languageRestriction" not in fake.requests[0].body["recognitionModel"]


async def test_v2_short_clip_with_speakers_goes_async_for_the_diarizer(
    speechkit_world: MakeWorld, fake: FakeSpeechKit
) -> None:
    """On v2 a short clip that wants speakers is async too: its word timings feed the diarizer."""
    world, _ = speechkit_world(async_api="v2")
    twin = MemoryDiarizer(
        [Turn(speaker="a", start=0.0, end=1.2), Turn(speaker="b", start=1.2, end=9)]
    )
    world.services = attrs.evolve(world.services, diarizer=twin)
    world.converter.duration = 10.0
    fake.finish_next("раз два три четыре")
    job = await world.submit(clip(10), speakers_wanted=2)
    done = await world.run_to_end(job.id)
    assert done.state is State.DONE
    assert fake.requests[0].path == "/speech/stt/v2/longRunningRecognize"
    assert len(twin.calls) == 1
    assert [s.id for s in done.speakers] == ["S1", "S2"]


class FastClock:
    """Real time run ``factor`` times faster, or held still: an hour of budget passes in seconds."""

    def __init__(self, factor: float) -> None:
        self.factor = factor
        self.start = datetime(2026, 6, 1, tzinfo=UTC)
        self.origin = time.monotonic()
        self.held: datetime | None = None

    def now(self) -> datetime:
        if self.held is not None:
            return self.held
        return self.start + timedelta(seconds=(time.monotonic() - self.origin) * self.factor)

    def hold(self) -> None:
        """Stop the clock where it is: however slow the machine, no budget refills meanwhile."""
        self.held = self.now()

    def release(self) -> None:
        """Run on from where the clock was held."""
        if self.held is not None:
            self.start, self.origin, self.held = self.held, time.monotonic(), None

    def real_seconds(self, until: datetime) -> float:
        return max((until - self.now()).total_seconds() / self.factor, 0.0)


async def test_600_jobs_past_the_start_quota_all_end_done(
    speechkit_world: MakeWorld, fake: FakeSpeechKit
) -> None:
    """600 async jobs against a fake allowing 500 starts per (scaled) hour: all done, none dead.

    The fake's hour is 2 s; the service's budget keeps its real numbers
    (500 starts an hour) on a clock that runs 1,800 times faster. With one
    attempt allowed per step, a single attempt spent on the quota would
    leave a job dead.
    """
    fake.starts_per_window = 500
    fake.window_seconds = 2.0
    clock = FastClock(1800.0)
    budgets = MemoryBudgetStore(clock)  # type: ignore[arg-type]
    world, bucket = speechkit_world(budgets=budgets, clock=clock, sync_max_seconds=0)
    world.converter.duration = 60.0
    world.services = attrs.evolve(world.services, settings=Settings(max_attempts=1))
    jobs = [(await world.submit(clip(60, n))).id for n in range(600)]
    # The first pass over every job runs on a held clock, so the budget runs dry
    # at 500 starts whatever the machine's speed; then time runs on.
    clock.hold()
    async with asyncio.timeout(120):
        while True:
            worked = False
            for state in (State.CONVERT, State.RECOGNIZE, State.CHECK):
                while (lease := await acquire_next(world.services, state)) is not None:
                    await process(world.services, lease)
                    worked = True
            clock.release()
            counts = await world.repo.count_by_state()
            if set(counts) <= {State.DONE, State.FAILED, State.DEAD}:
                break
            if not worked:
                # Nothing is ready: wait (in real time) for the soonest delayed job.
                waiting = [j for j in await world.repo.list_jobs(limit=1000) if j.delay_time]
                soonest = min(j.delay_time for j in waiting if j.delay_time is not None)
                await asyncio.sleep(clock.real_seconds(soonest))
    assert counts == {State.DONE: 600}
    assert (
        len(fake.requests_to("/speech/stt/v2"))
        - fake.throttled["/speech/stt/v2/longRunningRecognize"]
        == 600
    )
    # Each start told to wait keeps its turn (ADR 61): told once, not again at every refill
    # (1,328 times for these 600 jobs before turns; 550 with them, one per job past the burst).
    paced = sum(1 for name, taken in budgets.takes if name == "speechkit.starts" and not taken)
    assert 0 < paced <= len(jobs)
    assert bucket.names() == []
    assert len(jobs) == 600
