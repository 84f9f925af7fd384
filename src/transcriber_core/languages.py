"""What a sender may ask of a recognition: its language, a prompt, transcribe or translate.

One set of rules for every intake (``POST /api/audio``, ``/v1``, later the
Telegram ``/language`` command, SPEC §18, §19): each recognizer says what
it can do (``Abilities``), and ``recognition_request`` checks a sender's
fields against it, refusing with ``OptionRefused`` (a stable code, the
field at fault, and the accepted values in its message). The job keeps the
checked ``RecognitionRequest``; the recognize step hands it to the
recognizer.
"""

from __future__ import annotations

import enum

import attrs

from transcriber_core.errors import OptionRefused

#: The language value that leaves it to the recognizer (detection, or its configured default).
AUTO = "auto"
#: Longest prompt accepted, in characters: Whisper reads at most 224 tokens of it anyway.
MAX_PROMPT_CHARS = 1000


class Task(enum.StrEnum):
    """What the recognizer makes of the speech."""

    #: Text in the language spoken.
    TRANSCRIBE = "transcribe"
    #: English text, whatever the language spoken (Whisper's translate task).
    TRANSLATE = "translate"


@attrs.frozen(kw_only=True)
class Abilities:
    """What a recognizer can be asked for."""

    #: ISO 639-1 codes it recognises; ``AUTO`` is always accepted besides.
    languages: frozenset[str]
    #: It can translate to English (``Task.TRANSLATE``).
    translate: bool = False
    #: It reads a prompt (vocabulary, names); a recognizer without one ignores it.
    prompt: bool = False
    #: The recognizer's name, for refusals ("whisper cannot translate").
    name: str = "the recognizer"
    #: It labels speakers itself (SpeechKit v3, ADR 54): speakers need no ``Diarizer`` then.
    speakers: bool = False


@attrs.frozen(kw_only=True)
class RecognitionRequest:
    """What the sender asked for, checked: kept on the job, handed to the recognizer."""

    #: ISO 639-1 code; None is ``auto``.
    language: str | None = None
    #: Text that primes the recognizer (Whisper's initial prompt); None: none.
    prompt: str | None = None
    task: Task = Task.TRANSCRIBE
    #: Speakers wanted, as ``Job.speakers_wanted``: None off, 0 auto, else the count (SPEC §18);
    #: a recognizer that labels speakers itself (SpeechKit v3) is asked to when not None.
    speakers: int | None = None


#: A request that asks for nothing in particular.
DEFAULT_REQUEST = RecognitionRequest()


def check_language(value: str | None, abilities: Abilities) -> str | None:
    """The ISO 639-1 code ``value`` names, None for ``auto`` or nothing; else ``OptionRefused``.

    Case and surrounding blanks are forgiven ("EN " is "en"); the refusal
    names every accepted value.
    """
    if value is None:
        return None
    code = value.strip().lower()
    if code in ("", AUTO):
        return None
    if code not in abilities.languages:
        accepted = ", ".join([AUTO, *sorted(abilities.languages)])
        raise OptionRefused(
            f"language must be one of: {accepted}", code="bad_language", field="language"
        )
    return code


def check_task(value: str | None, abilities: Abilities) -> Task:
    """The task ``value`` names (default transcribe); ``OptionRefused`` saying why otherwise."""
    if value is None or value.strip() == "":
        return Task.TRANSCRIBE
    try:
        task = Task(value.strip().lower())
    except ValueError:
        raise OptionRefused(
            "task must be one of: " + ", ".join(Task), code="bad_task", field="task"
        ) from None
    if task is Task.TRANSLATE and not abilities.translate:
        raise OptionRefused(
            f"{abilities.name} cannot translate; send the recording to be transcribed instead",
            code="translation_unsupported",
            field="task",
        )
    return task


def check_prompt(value: str | None) -> str | None:
    """The prompt, None when empty; ``OptionRefused`` past ``MAX_PROMPT_CHARS`` or with controls."""
    if value is None or value.strip() == "":
        return None
    if len(value) > MAX_PROMPT_CHARS:
        raise OptionRefused(
            f"prompt must be at most {MAX_PROMPT_CHARS} characters",
            code="bad_prompt",
            field="prompt",
        )
    if any(ord(char) < 32 and char not in "\t\n\r" for char in value):
        raise OptionRefused(
            "prompt must not hold control characters", code="bad_prompt", field="prompt"
        )
    return value.strip()


def recognition_request(
    abilities: Abilities,
    *,
    language: str | None = None,
    prompt: str | None = None,
    task: str | None = None,
) -> RecognitionRequest:
    """The checked request of a sender's fields; ``OptionRefused`` names the first bad one."""
    return RecognitionRequest(
        language=check_language(language, abilities),
        prompt=check_prompt(prompt),
        task=check_task(task, abilities),
    )
