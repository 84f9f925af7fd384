"""The demo recognizer's own knobs, the ones ``[memory]`` in the config sets."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from transcriber_adapters.memory import MemoryRecognizer
from transcriber_core.entities import FileRecord, Location
from transcriber_core.ports import CheckResult, Pending, Recognized, Rejected

AUDIO = FileRecord(
    id="audio-id-for-demo",
    location=Location.LOCAL,
    size=100,
    extension=".ogg",
    created=datetime(2026, 1, 1, tzinfo=UTC),
)


async def outcomes(recognizer: MemoryRecognizer, checks: int) -> list[CheckResult]:
    """Start one operation and check it ``checks`` times."""
    started = await recognizer.start(AUDIO, duration=2.0)
    return [await recognizer.check(started.operation_id) for _ in range(checks)]


async def test_default_text_names_the_duration() -> None:
    """Without a text the transcript says how long the recording was, at the first check."""
    assert await outcomes(MemoryRecognizer(), 1) == [Recognized(text="A recording of 2.0 seconds.")]


async def test_set_text_after_pending_checks() -> None:
    """The set text comes after exactly ``checks_before_done`` pending answers."""
    recognizer = MemoryRecognizer(text="Hello from the demo.", checks_before_done=2)
    assert await outcomes(recognizer, 3) == [
        Pending(retry_after=None),
        Pending(retry_after=None),
        Recognized(text="Hello from the demo."),
    ]


async def test_fail_with_rejects_every_operation() -> None:
    """With ``fail_with`` each operation, not only the next, ends rejected with that reason."""
    recognizer = MemoryRecognizer(text="never sent", checks_before_done=1, fail_with="demo failure")
    for _ in range(2):
        assert await outcomes(recognizer, 2) == [
            Pending(retry_after=None),
            Rejected(reason="demo failure"),
        ]


async def test_a_scripted_operation_wins_over_fail_with() -> None:
    """``finish_next`` still scripts the next operation of a recognizer set to fail."""
    recognizer = MemoryRecognizer(fail_with="demo failure")
    recognizer.finish_next("scripted")
    assert await outcomes(recognizer, 1) == [Recognized(text="scripted")]
    assert await outcomes(recognizer, 1) == [Rejected(reason="demo failure")]


def test_negative_pending_checks_are_refused() -> None:
    """A negative count is a mistake, refused when the recognizer is made."""
    with pytest.raises(ValueError, match="checks_before_done"):
        MemoryRecognizer(checks_before_done=-1)
