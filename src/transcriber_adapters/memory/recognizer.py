"""The demo recognizer: pending a set number of checks, then a set text, or failing on demand."""

from __future__ import annotations

import asyncio
import secrets
from datetime import timedelta

import attrs

from transcriber_core.entities import FileRecord, Word
from transcriber_core.errors import RecognitionFailed, RecognizerUnavailable, TranscriberError
from transcriber_core.languages import DEFAULT_REQUEST, Abilities, RecognitionRequest, Task
from transcriber_core.ports import (
    CheckResult,
    Pending,
    ProgressCallback,
    Recognized,
    RecognizerLimits,
    Rejected,
    Started,
)
from transcriber_core.subtitles import ends_sentence

#: The languages the demo recognizer claims to know (ISO 639-1).
MEMORY_LANGUAGES = frozenset({"de", "en", "es", "fr", "it", "kk", "pt", "ru", "tr", "uk"})
#: What a translated text starts with: the demo's translation is deterministic, and visible.
TRANSLATED_PREFIX = "In English: "


@attrs.define
class _Operation:
    #: Checks answered "pending" before the outcome.
    pending_checks: int
    #: The transcript or rejection this operation ends with.
    text: str | None = None
    reject: str | None = None
    checks: int = 0
    #: Seconds of the audio it was started on, to time the words; None when unknown.
    duration: float | None = None
    #: The language it says it heard.
    language: str | None = None
    #: Voices to label, sentence by sentence; 0: none.
    voices: int = 0


class MemoryRecognizer:
    """Recognises nothing: answers "pending" ``checks_before_done`` times, then a text.

    The default text names the recording's duration, so a demo shows the
    pipeline measured something real. With ``fail_with`` every operation
    ends rejected with that reason instead. ``finish_next`` and
    ``reject_next`` script the next operation; ``fail_next_start`` and
    ``fail_next_check`` make a call raise. Words are timed over the
    audio's duration when it is known, as if read aloud: longer words take
    longer, and sentences are apart by a pause (ADR 34).

    It takes audio of any length unless ``max_seconds`` or ``max_bytes``
    say otherwise (its ``limits``); longer audio is refused at ``start``,
    naming the limit, as a real recognizer would (ADR 26).

    It claims ``MEMORY_LANGUAGES``, reads prompts and translates (SPEC §18):
    a translated text is its text behind ``TRANSLATED_PREFIX``; the language
    it says it heard is the one asked for ("en" for a translation), else
    none. ``requests`` records what each ``start`` was asked.

    With ``work_seconds`` each ``start`` works that long (cancellably), then
    returns its outcome at once, as a local engine does (ADR 28): no check
    follows, so any process may take the next part of a long recording.

    With ``speakers`` N (SPEC §25, ``[memory] speakers``) it labels speakers
    itself for a recording that asks for them: N voices (or the count asked
    for) take turns sentence by sentence, each with a print of its own that
    is the same in every recording (``demo_print``), so voices can be
    remembered and matched without a model. Its default text then has a
    sentence for each voice.
    """

    def __init__(
        self,
        *,
        checks_before_done: int = 0,
        text: str | None = None,
        fail_with: str | None = None,
        max_seconds: float | None = None,
        max_bytes: int | None = None,
        work_seconds: float = 0.0,
        speakers: int = 0,
    ) -> None:
        if checks_before_done < 0:
            raise ValueError("checks_before_done must not be negative")
        if not work_seconds >= 0:
            raise ValueError("work_seconds must not be negative")
        if not 0 <= speakers <= DEMO_MAX_SPEAKERS:
            raise ValueError(f"speakers must be from 0 to {DEMO_MAX_SPEAKERS}")
        #: Voices it labels in a recording that asks for speakers; 0: it labels none.
        self.speakers = speakers
        #: Seconds each ``start`` works before it answers with the outcome; 0: checks answer.
        self.work_seconds = work_seconds
        #: What one operation accepts.
        self.limits = RecognizerLimits(max_seconds=max_seconds, max_bytes=max_bytes)
        #: What it can be asked for.
        self.abilities = Abilities(
            languages=MEMORY_LANGUAGES,
            translate=True,
            prompt=True,
            speakers=speakers > 0,
            name="the memory recognizer",
        )
        #: The request of each ``start``, in order.
        self.requests: list[RecognitionRequest] = []
        self.checks_before_done = checks_before_done
        self.text = text
        self.fail_with = fail_with
        self.operations: dict[str, _Operation] = {}
        self.started: list[str] = []
        self._start_failures: list[TranscriberError] = []
        self._check_failures: list[TranscriberError] = []
        self._scripts: list[_Operation] = []

    def reset(self) -> None:
        """Forget every operation and pending failure."""
        self.operations.clear()
        self.started.clear()
        self.requests.clear()
        self._start_failures.clear()
        self._check_failures.clear()
        self._scripts.clear()

    def fail_next_start(self, error: TranscriberError) -> None:
        """Make the next ``start`` raise ``error``."""
        self._start_failures.append(error)

    def fail_next_check(self, error: TranscriberError) -> None:
        """Make the next ``check`` raise ``error``."""
        self._check_failures.append(error)

    def finish_next(self, text: str, *, pending_checks: int = 0) -> None:
        """Make the next started operation pend ``pending_checks`` times, then end with ``text``."""
        self._scripts.append(_Operation(pending_checks=pending_checks, text=text))

    def reject_next(self, reason: str, *, pending_checks: int = 0) -> None:
        """Make the next started operation end rejected with ``reason``."""
        self._scripts.append(_Operation(pending_checks=pending_checks, reject=reason))

    async def start(
        self,
        audio: FileRecord,
        *,
        duration: float | None,
        request: RecognitionRequest = DEFAULT_REQUEST,
        on_progress: ProgressCallback | None = None,
    ) -> Started:
        """Start an operation on ``audio``; the first check may come at once."""
        if self._start_failures:
            raise self._start_failures.pop(0)
        refusal = self.limits.refusal(seconds=duration, size=audio.size)
        if refusal is not None:
            raise RecognitionFailed(refusal)
        operation_id = secrets.token_urlsafe(16)
        if self._scripts:
            operation = self._scripts.pop(0)
        elif self.fail_with is not None:
            operation = _Operation(pending_checks=self.checks_before_done, reject=self.fail_with)
        else:
            voices = _voices(self.speakers, request.speakers)
            text = self.text if self.text is not None else _describe(duration, voices)
            operation = _Operation(pending_checks=self.checks_before_done, text=text)
        operation.voices = _voices(self.speakers, request.speakers)
        operation.duration = duration
        operation.language = request.language
        if request.task is Task.TRANSLATE and operation.text is not None:
            operation.language = "en"
            operation.text = TRANSLATED_PREFIX + operation.text
        self.requests.append(request)
        self.operations[operation_id] = operation
        self.started.append(operation_id)
        if self.work_seconds > 0:
            await asyncio.sleep(self.work_seconds)
            operation.pending_checks = 0
            outcome = await self.check(operation_id)
            if isinstance(outcome, Recognized | Rejected):
                return Started(operation_id=operation_id, outcome=outcome)
        return Started(operation_id=operation_id, advised_delay=timedelta(0))

    async def check(self, operation_id: str) -> CheckResult:
        """Pending until the operation has been checked enough, then its outcome."""
        if self._check_failures:
            raise self._check_failures.pop(0)
        operation = self.operations.get(operation_id)
        if operation is None:
            # A lost operation is what a restarted recognizer would say; try again later.
            raise RecognizerUnavailable("the recognizer does not know this operation")
        operation.checks += 1
        if operation.checks <= operation.pending_checks:
            return Pending(retry_after=None)
        if operation.reject is not None:
            return Rejected(reason=operation.reject)
        text = operation.text or ""
        words = _timed(text, operation.duration)
        if operation.voices:
            words = _in_turns(words, operation.voices)
        labels = {word.speaker for word in words if word.speaker is not None}
        return Recognized(
            text=text,
            words=words,
            language=operation.language,
            prints={label: demo_print(label) for label in labels},
        )


#: The pause after a sentence, as long as this many letters take to say.
SENTENCE_PAUSE_LETTERS = 10


def _timed(text: str, duration: float | None) -> tuple[Word, ...]:
    """The words of ``text`` as if read aloud over ``duration`` seconds; none when it is unknown.

    Each word lasts as long as its letters, with a gap of one letter after
    it and a longer pause after a sentence, all scaled to fill the audio.
    """
    words = text.split()
    if duration is None or duration <= 0 or not words:
        return ()
    weights = [
        len(word) + 1 + (SENTENCE_PAUSE_LETTERS if ends_sentence(word) else 0)
        for word in words[:-1]
    ] + [len(words[-1])]
    scale = duration / sum(weights)
    timed: list[Word] = []
    at = 0
    for word, weight in zip(words, weights, strict=True):
        timed.append(Word(text=word, start=at * scale, end=(at + len(word)) * scale))
        at += weight
    return tuple(timed)


def _describe(duration: float | None, voices: int = 0) -> str:
    length = "unknown length" if duration is None else f"{duration:.1f} seconds"
    others = " Another voice takes its turn." * max(0, voices - 1)
    return f"A recording of {length}.{others}"


#: The most voices the demo labels (the most a sender may ask for).
DEMO_MAX_SPEAKERS = 10
#: The length of the demo's prints: one dimension a voice, every other print orthogonal.
DEMO_PRINT_DIMS = 16
#: What the demo's speaker labels start with (``demo-1``…); the core numbers them ``S1``…
_DEMO_LABEL = "demo-"


def demo_print(label: str) -> tuple[float, ...]:
    """The demo voice ``label``'s print: the same in every recording, orthogonal to the others."""
    index = int(label.removeprefix(_DEMO_LABEL)) - 1
    return tuple(1.0 if i == index else 0.0 for i in range(DEMO_PRINT_DIMS))


def _voices(configured: int, wanted: int | None) -> int:
    """Voices to label: none unless asked; the count asked for, else the configured number."""
    if configured == 0 or wanted is None:
        return 0
    return wanted if wanted > 0 else configured


def _in_turns(words: tuple[Word, ...], voices: int) -> tuple[Word, ...]:
    """``words`` labelled ``demo-1``… taking turns: a sentence each, then the next voice."""
    labelled = []
    sentence = 0
    for word in words:
        labelled.append(attrs.evolve(word, speaker=f"{_DEMO_LABEL}{sentence % voices + 1}"))
        if ends_sentence(word.text):
            sentence += 1
    return tuple(labelled)
