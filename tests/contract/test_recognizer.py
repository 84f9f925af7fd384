"""The recognizer contract, run over every recognizer adapter."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime

import pytest

from tests.support.fake_speechkit import API_KEY, FakeSpeechKit
from transcriber_adapters.memory.recognizer import MemoryRecognizer
from transcriber_adapters.yandex import YandexRecognizer
from transcriber_contracts.recognizer import RecognizerCase, RecognizerContract
from transcriber_core.entities import FileRecord, Location
from transcriber_core.errors import RecognitionFailed, RecognizerUnavailable


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
    """SpeechKit's adapter keeps the contract against a fake SpeechKit over real HTTP."""

    @pytest.fixture
    async def case(self) -> AsyncIterator[RecognizerCase]:
        async with FakeSpeechKit() as fake:
            recognizer = YandexRecognizer(
                api_key=API_KEY,
                bucket="contract-bucket",
                stt_url=fake.stt_url,
                operation_url=fake.operation_url,
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
