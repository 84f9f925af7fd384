"""The recognizer contract, run over every recognizer adapter."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from transcriber_adapters.memory.recognizer import MemoryRecognizer
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
