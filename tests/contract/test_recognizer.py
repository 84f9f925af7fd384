"""The recognizer contract, run over every recognizer adapter."""

from __future__ import annotations

import contextlib
import os
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tests.support.fake_speechkit import API_KEY, FakeSpeechKit
from tests.support.speech import silence, speak, tiny_en_model
from transcriber_adapters.filesystem import FilesystemFileStore
from transcriber_adapters.memory.recognizer import MemoryRecognizer
from transcriber_adapters.whisper import WhisperRecognizer, WhisperSettings
from transcriber_adapters.yandex import YandexRecognizer
from transcriber_contracts.recognizer import RecognizerCase, RecognizerContract
from transcriber_core.entities import FileRecord, Location
from transcriber_core.errors import RecognitionFailed, RecognizerUnavailable, StorageUnavailable


class MemoryDriver:
    """Scripts the memory recognizer through its own knobs."""

    def __init__(self, recognizer: MemoryRecognizer) -> None:
        self.recognizer = recognizer

    def finish_next(self, text: str, *, pending_checks: int) -> None:
        self.recognizer.finish_next(text, pending_checks=pending_checks)

    def reject_next(self, reason: str) -> None:
        self.recognizer.reject_next(reason)

    def unavailable_next_start(self) -> None:
        self.recognizer.fail_next_start(RecognizerUnavailable())

    def unavailable_next_check(self) -> None:
        self.recognizer.fail_next_check(RecognizerUnavailable())

    def refuse_next_start(self) -> None:
        self.recognizer.fail_next_start(RecognitionFailed())


class TestMemoryRecognizer(RecognizerContract):
    """The demo recognizer keeps the contract."""

    @pytest.fixture
    async def case(self) -> RecognizerCase:
        recognizer = MemoryRecognizer()
        audio = FileRecord(
            id="audio-id-for-contract",
            location=Location.LOCAL,
            size=100,
            extension=".ogg",
            created=datetime(2026, 1, 1, tzinfo=UTC),
        )
        return RecognizerCase(recognizer=recognizer, driver=MemoryDriver(recognizer), audio=audio)


class TestYandexRecognizer(RecognizerContract):
    """SpeechKit's adapter on API v3 (the default) keeps the contract against a fake over HTTP."""

    async_api = "v3"

    @pytest.fixture
    async def case(self) -> AsyncIterator[RecognizerCase]:
        async with FakeSpeechKit() as fake:
            recognizer = YandexRecognizer(
                api_key=API_KEY,
                bucket="contract-bucket",
                stt_url=fake.stt_url,
                operation_url=fake.operation_url,
                v3_url=fake.v3_url,
                async_api=self.async_api,
            )
            audio = FileRecord(
                id="c3RvcmFnZS1jb3B5LWlkLTAx",
                location=Location.S3,
                object_key="transcriber/c3RvcmFnZS1jb3B5LWlkLTAx.ogg",
                size=100,
                extension=".ogg",
                created=datetime(2026, 1, 1, tzinfo=UTC),
            )
            try:
                yield RecognizerCase(recognizer=recognizer, driver=fake, audio=audio)
            finally:
                await recognizer.close()


class TestYandexV2Recognizer(TestYandexRecognizer):
    """SpeechKit's adapter on API v2 (``async_api = "v2"``) keeps the contract too."""

    async_api = "v2"


class TestYandexSyncRecognizer(RecognizerContract):
    """SpeechKit's adapter on its sync path (v1, short local audio) keeps the contract too."""

    finishes_at_start = True

    @pytest.fixture
    async def case(self, tmp_path: Path) -> AsyncIterator[RecognizerCase]:
        store = FilesystemFileStore(tmp_path / "files", staging_dir=tmp_path / "staging")
        clip = tmp_path / "clip.ogg"
        clip.write_bytes(b"OggS" + bytes(500))
        audio = await store.put(
            "c3luYy1jbGlwLWlkLTAx", ".ogg", clip, now=datetime(2026, 1, 1, tzinfo=UTC)
        )
        async with FakeSpeechKit() as fake:
            recognizer = YandexRecognizer(
                api_key=API_KEY,
                bucket="contract-bucket",
                stt_url=fake.stt_url,
                operation_url=fake.operation_url,
                sync_url=fake.sync_url,
                files=store,
            )
            try:
                yield RecognizerCase(recognizer=recognizer, driver=fake, audio=audio)
            finally:
                await recognizer.close()
            # Every start of the suite went the sync way: no operation was started.
            assert fake.requests_to("/speech/stt/v2") == []


class ScriptedAudio:
    """The file store Whisper reads from, handing out the audio the driver prepared next.

    The recognizer under test is real; what it is given to hear is the
    script: spoken English, silence, bytes that are no audio, or a store
    that fails once.
    """

    def __init__(self, store: FilesystemFileStore) -> None:
        self.store = store
        self.location = store.location
        self.next: list[Path | Exception] = []

    @contextlib.asynccontextmanager
    async def working_copy(self, record: FileRecord) -> AsyncIterator[Path]:
        """The next scripted audio, or the stored file when nothing is scripted."""
        if self.next:
            scripted = self.next.pop(0)
            if isinstance(scripted, Exception):
                raise scripted
            yield scripted
            return
        async with self.store.working_copy(record) as path:
            yield path

    def __getattr__(self, name: str) -> object:
        return getattr(self.store, name)


class WhisperDriver:
    """Scripts Whisper by what it will hear: espeak-ng's voice, silence, or broken bytes."""

    def __init__(self, files: ScriptedAudio, folder: Path) -> None:
        self.files = files
        self.folder = folder
        self.made = 0

    def _path(self, suffix: str) -> Path:
        self.made += 1
        return self.folder / f"scripted-{self.made}{suffix}"

    def finish_next(self, text: str, *, pending_checks: int) -> None:
        self.files.next.append(speak(text, self._path(".ogg")))

    def reject_next(self, reason: str) -> None:
        self.files.next.append(silence(self._path(".ogg"), 4))

    def unavailable_next_start(self) -> None:
        self.files.next.append(StorageUnavailable())

    def unavailable_next_check(self) -> None:
        raise AssertionError("a recognizer that finishes at start is never checked")

    def refuse_next_start(self) -> None:
        broken = self._path(".ogg")
        broken.write_bytes(os.urandom(4096))
        self.files.next.append(broken)


class TestWhisperRecognizer(RecognizerContract):
    """Whisper tiny.en keeps the contract, hearing espeak-ng's English (no hub, no network)."""

    finishes_at_start = True
    hears_speech = True

    @pytest.fixture
    async def case(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> RecognizerCase:
        monkeypatch.setenv("HF_HUB_OFFLINE", "1")
        store = FilesystemFileStore(tmp_path / "files", staging_dir=tmp_path / "staging")
        files = ScriptedAudio(store)
        # Greedy decoding: the contract is about behaviour; accuracy is scored in test_whisper.py.
        settings = WhisperSettings(model_dir=tiny_en_model(), beam_size=1, temperatures=(0.0,))
        recognizer = WhisperRecognizer(files, settings)
        audio = FileRecord(
            id="d2hpc3Blci1hdWRpby0wMQ",
            location=Location.LOCAL,
            size=100,
            extension=".ogg",
            created=datetime(2026, 1, 1, tzinfo=UTC),
        )
        return RecognizerCase(
            recognizer=recognizer, driver=WhisperDriver(files, tmp_path), audio=audio
        )
