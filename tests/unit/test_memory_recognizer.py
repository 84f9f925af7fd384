"""The demo recognizer's own knobs, the ones ``[memory]`` in the config sets."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from transcriber_adapters.memory import MemoryRecognizer
from transcriber_core.entities import FileRecord, Location
from transcriber_core.errors import RecognitionFailed
from transcriber_core.ports import NO_LIMITS, CheckResult, Pending, Recognized, Rejected

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
    [outcome] = await outcomes(MemoryRecognizer(), 1)
    assert isinstance(outcome, Recognized)
    assert outcome.text == "A recording of 2.0 seconds."


async def test_set_text_after_pending_checks() -> None:
    """The set text comes after exactly ``checks_before_done`` pending answers."""
    recognizer = MemoryRecognizer(text="Hello from the demo.", checks_before_done=2)
    first, second, third = await outcomes(recognizer, 3)
    assert first == second == Pending(retry_after=None)
    assert isinstance(third, Recognized)
    assert third.text == "Hello from the demo."


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
    [scripted] = await outcomes(recognizer, 1)
    assert isinstance(scripted, Recognized)
    assert scripted.text == "scripted"
    assert await outcomes(recognizer, 1) == [Rejected(reason="demo failure")]


def test_negative_pending_checks_are_refused() -> None:
    """A negative count is a mistake, refused when the recognizer is made."""
    with pytest.raises(ValueError, match="checks_before_done"):
        MemoryRecognizer(checks_before_done=-1)


async def test_words_are_timed_over_the_duration() -> None:
    """Each word gets a rising timing inside the audio's length, so joined parts can be checked."""
    [outcome] = await outcomes(MemoryRecognizer(text="one two three four"), 1)
    assert isinstance(outcome, Recognized)
    assert [word.text for word in outcome.words] == ["one", "two", "three", "four"]
    starts = [word.start for word in outcome.words]
    assert starts == sorted(starts)
    assert all(0 <= word.start < word.end <= 2.0 for word in outcome.words)


async def test_limits_refuse_longer_audio_naming_the_limit() -> None:
    """Audio past ``max_seconds`` is refused at start with the limit in the reason."""
    recognizer = MemoryRecognizer(max_seconds=1.5)
    assert recognizer.limits.max_seconds == 1.5
    with pytest.raises(RecognitionFailed, match=r"limit of 1\.5 seconds"):
        await recognizer.start(AUDIO, duration=2.0)
    assert recognizer.started == []


async def test_byte_limit_refuses_audio_of_unknown_length() -> None:
    """A file over ``max_bytes`` is refused even when its length is unknown, naming the limit."""
    recognizer = MemoryRecognizer(max_bytes=99)
    with pytest.raises(RecognitionFailed, match="limit of 99 bytes"):
        await recognizer.start(AUDIO, duration=None)


def test_no_limits_by_default() -> None:
    """The demo recognizer takes audio of any length unless told otherwise."""
    assert MemoryRecognizer().limits == NO_LIMITS


async def test_words_sound_like_speech_with_a_pause_between_sentences() -> None:
    """Longer words last longer, the last ends with the audio, and sentences are further apart."""
    recognizer = MemoryRecognizer(text="Hello there. A demo sentence follows.")
    started = await recognizer.start(AUDIO, duration=10.0)
    outcome = await recognizer.check(started.operation_id)
    assert isinstance(outcome, Recognized)
    hello, there, a, demo, sentence, follows = outcome.words
    assert hello.start == 0.0
    assert follows.end == pytest.approx(10.0)
    assert hello.end - hello.start > a.end - a.start
    word_gap, sentence_gap = there.start - hello.end, a.start - there.end
    assert sentence_gap > 5 * word_gap
    assert demo.start - a.end == pytest.approx(word_gap)
    assert sentence.start < follows.start
