"""The contract every Recognizer adapter passes."""

from __future__ import annotations

import re
from typing import ClassVar, Protocol

import attrs
import pytest

from transcriber_core.entities import FileRecord
from transcriber_core.errors import PermanentError, TransientError
from transcriber_core.languages import RecognitionRequest
from transcriber_core.ports import Pending, Recognized, Recognizer, Rejected, Started


class RecognizerDriver(Protocol):
    """Scripts what the recognizer's backend will answer next."""

    def finish_next(self, text: str, *, pending_checks: int) -> None:
        """The next operation is pending ``pending_checks`` times, then ends with ``text``."""
        ...

    def reject_next(self, reason: str) -> None:
        """The next started operation ends without a transcript."""
        ...

    def unavailable_next_start(self) -> None:
        """The next start meets a temporary failure (throttling, a 5xx, a dropped connection)."""
        ...

    def unavailable_next_check(self) -> None:
        """The next check meets a temporary failure."""
        ...

    def refuse_next_start(self) -> None:
        """The next start is refused for good (bad request, bad credentials)."""
        ...


@attrs.frozen(kw_only=True)
class RecognizerCase:
    """What the suite needs: the adapter, its backend's driver, and audio it can read."""

    recognizer: Recognizer
    driver: RecognizerDriver
    audio: FileRecord


async def _until_done(recognizer: Recognizer, operation_id: str, limit: int = 20) -> object:
    for _ in range(limit):
        result = await recognizer.check(operation_id)
        if not isinstance(result, Pending):
            return result
    raise AssertionError(f"still pending after {limit} checks")


def _words(text: str) -> list[str]:
    return re.sub(r"[^\w\s']", " ", text.lower()).split()


class RecognizerContract:
    """Subclass and provide an async fixture ``case`` returning a ``RecognizerCase``.

    Capability flags say how an adapter differs for real, never to skip:
    ``finishes_at_start`` for a recognizer that works within ``start`` and
    returns the outcome with ``Started`` (a local engine: nothing is pending,
    nothing is checked); ``hears_speech`` for one whose driver says its texts
    aloud, so texts match by their words and the phrases are English.
    """

    finishes_at_start: ClassVar[bool] = False
    hears_speech: ClassVar[bool] = False

    async def outcome(self, case: RecognizerCase, started: Started) -> object:
        """The operation's end: given with ``Started``, or polled until it is not pending."""
        if self.finishes_at_start:
            assert started.outcome is not None, "a recognizer that finishes at start gave none"
            return started.outcome
        assert started.outcome is None, "an outcome at start without finishes_at_start"
        return await _until_done(case.recognizer, started.operation_id)

    def same_text(self, heard: str, said: str) -> bool:
        """Exactly the scripted text; for a recognizer that hears speech, the same words."""
        return _words(heard) == _words(said) if self.hears_speech else heard == said

    async def test_start_returns_distinct_operation_ids(self, case: RecognizerCase) -> None:
        """Two starts are two operations, each with a non-empty id."""
        case.driver.finish_next("one", pending_checks=0)
        case.driver.finish_next("two", pending_checks=0)
        first = await case.recognizer.start(case.audio, duration=1.0)
        second = await case.recognizer.start(case.audio, duration=1.0)
        assert first.operation_id
        assert first.operation_id != second.operation_id

    async def test_advised_delay_is_never_negative(self, case: RecognizerCase) -> None:
        """An advised first-check delay, when given, is not negative."""
        case.driver.finish_next("text", pending_checks=0)
        started = await case.recognizer.start(case.audio, duration=1.0)
        assert started.advised_delay is None or started.advised_delay.total_seconds() >= 0

    async def test_pending_then_text(self, case: RecognizerCase) -> None:
        """An operation is pending as often as scripted, then yields the text (at once if local)."""
        said = "hello world" if self.hears_speech else "привет мир"
        case.driver.finish_next(said, pending_checks=2)
        started = await case.recognizer.start(case.audio, duration=3.0)
        result: object
        if self.finishes_at_start:
            result = started.outcome
        else:
            assert isinstance(await case.recognizer.check(started.operation_id), Pending)
            assert isinstance(await case.recognizer.check(started.operation_id), Pending)
            result = await case.recognizer.check(started.operation_id)
        assert isinstance(result, Recognized)
        assert self.same_text(result.text, said), result.text

    async def test_words_are_ordered_timings(self, case: RecognizerCase) -> None:
        """Word timings, when given, are non-negative and each ends after it starts."""
        case.driver.finish_next("a b c", pending_checks=0)
        started = await case.recognizer.start(case.audio, duration=3.0)
        result = await self.outcome(case, started)
        assert isinstance(result, Recognized)
        for word in result.words:
            assert 0 <= word.start <= word.end

    async def test_rejected_operation_gives_a_reason(self, case: RecognizerCase) -> None:
        """An operation the backend rejects ends Rejected with a non-empty reason."""
        case.driver.reject_next("no speech")
        started = await case.recognizer.start(case.audio, duration=1.0)
        result = await self.outcome(case, started)
        assert isinstance(result, Rejected)
        assert result.reason

    async def test_unavailable_start_is_transient(self, case: RecognizerCase) -> None:
        """A temporary failure at start raises TransientError, and the next start works."""
        case.driver.unavailable_next_start()
        with pytest.raises(TransientError):
            await case.recognizer.start(case.audio, duration=1.0)
        case.driver.finish_next("again", pending_checks=0)
        started = await case.recognizer.start(case.audio, duration=1.0)
        assert started.operation_id

    async def test_unavailable_check_is_transient(self, case: RecognizerCase) -> None:
        """A temporary failure at check raises TransientError and the operation survives.

        A recognizer that finishes at start has no operation left to check: a
        job found in check under it (started by another recognizer before a
        config change) ends with a reason instead of being polled forever.
        """
        case.driver.finish_next("kept", pending_checks=0)
        started = await case.recognizer.start(case.audio, duration=1.0)
        if self.finishes_at_start:
            left = await case.recognizer.check(started.operation_id)
            assert isinstance(left, Rejected)
            assert left.reason
            return
        case.driver.unavailable_next_check()
        with pytest.raises(TransientError):
            await case.recognizer.check(started.operation_id)
        result = await _until_done(case.recognizer, started.operation_id)
        assert isinstance(result, Recognized)
        assert result.text == "kept"

    async def test_refused_start_is_permanent(self, case: RecognizerCase) -> None:
        """A start the backend refuses for good raises PermanentError."""
        case.driver.refuse_next_start()
        with pytest.raises(PermanentError):
            await case.recognizer.start(case.audio, duration=1.0)

    async def test_errors_carry_no_object_key(self, case: RecognizerCase) -> None:
        """Error texts never carry the audio's object key or stored name (reference: Privacy)."""
        case.driver.refuse_next_start()
        with pytest.raises(PermanentError) as info:
            await case.recognizer.start(case.audio, duration=1.0)
        text = str(info.value)
        assert case.audio.name not in text
        assert case.audio.id not in text
        if case.audio.object_key:
            assert case.audio.object_key not in text

    async def test_abilities_name_iso_codes_and_a_request_is_taken(
        self, case: RecognizerCase
    ) -> None:
        """Its languages are ISO 639-1 codes; a start with one of them and a prompt succeeds."""
        abilities = case.recognizer.abilities
        assert abilities.languages, "a recognizer knows at least one language"
        assert all(re.fullmatch(r"[a-z]{2}", code) for code in abilities.languages)
        assert "auto" not in abilities.languages
        language = "en" if "en" in abilities.languages else min(abilities.languages)
        said = "hello world" if self.hears_speech else "text"
        case.driver.finish_next(said, pending_checks=0)
        request = RecognitionRequest(language=language, prompt="Names: Dmitri")
        started = await case.recognizer.start(case.audio, duration=1.0, request=request)
        assert isinstance(await self.outcome(case, started), Recognized)
