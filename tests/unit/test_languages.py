"""What a sender may ask of a recognition, checked once for every intake (SPEC §18)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.world import make_world
from transcriber_core.entities import Origin, State
from transcriber_core.errors import OptionRefused
from transcriber_core.intake import submit
from transcriber_core.languages import (
    MAX_PROMPT_CHARS,
    Abilities,
    RecognitionRequest,
    Task,
    check_language,
    check_prompt,
    check_task,
    recognition_request,
)

SPEECHKIT_LIKE = Abilities(languages=frozenset({"ru", "en"}), name="SpeechKit")


@pytest.mark.parametrize("value", [None, "", "auto", " AUTO "])
def test_auto_and_nothing_mean_detection(value: str | None) -> None:
    """No language, an empty one and auto (any case) all leave it to the recognizer."""
    assert check_language(value, SPEECHKIT_LIKE) is None


def test_a_known_code_is_kept_in_lower_case() -> None:
    """ " RU" is the recognizer's "ru"."""
    assert check_language(" RU", SPEECHKIT_LIKE) == "ru"


@pytest.mark.parametrize("value", ["de", "ru-RU", "russian", "xx"])
def test_an_unknown_language_is_refused_naming_the_accepted_values(value: str) -> None:
    """A code the recognizer does not know is bad_language, listing auto and its codes."""
    with pytest.raises(OptionRefused) as refused:
        check_language(value, SPEECHKIT_LIKE)
    assert (refused.value.code, refused.value.field) == ("bad_language", "language")
    assert refused.value.message == "language must be one of: auto, en, ru"


def test_translation_is_refused_by_a_recognizer_that_cannot() -> None:
    """translate on SpeechKit is translation_unsupported, naming the recognizer."""
    with pytest.raises(OptionRefused) as refused:
        check_task("translate", SPEECHKIT_LIKE)
    assert refused.value.code == "translation_unsupported"
    assert "SpeechKit cannot translate" in refused.value.message
    assert check_task("translate", Abilities(languages=frozenset(), translate=True)) is (
        Task.TRANSLATE
    )


def test_an_unknown_task_is_refused() -> None:
    """A task other than transcribe or translate is bad_task."""
    with pytest.raises(OptionRefused) as refused:
        check_task("summarise", SPEECHKIT_LIKE)
    assert refused.value.code == "bad_task"
    assert check_task(None, SPEECHKIT_LIKE) is Task.TRANSCRIBE


def test_a_prompt_is_trimmed_bounded_and_free_of_controls() -> None:
    """Blank is none; longer than the bound or with control characters is bad_prompt."""
    assert check_prompt("  ") is None
    assert check_prompt(" Ярослав, Dmitri\n") == "Ярослав, Dmitri"
    for bad in ("x" * (MAX_PROMPT_CHARS + 1), "bell\x07"):
        with pytest.raises(OptionRefused) as refused:
            check_prompt(bad)
        assert refused.value.code == "bad_prompt"


def test_the_request_gathers_the_checked_fields() -> None:
    """recognition_request checks each field and bundles them."""
    abilities = Abilities(languages=frozenset({"en"}), translate=True, prompt=True)
    assert recognition_request(abilities, language="EN", prompt="names", task="translate") == (
        RecognitionRequest(language="en", prompt="names", task=Task.TRANSLATE)
    )


async def test_the_request_travels_from_intake_to_the_recognizer(tmp_path: Path) -> None:
    """What submit is given is kept on the job and handed to the recognizer's start."""
    world = make_world(tmp_path)
    upload = tmp_path / "upload"
    upload.write_bytes(b"RIFF fake recording bytes")
    asked = RecognitionRequest(language="ru", prompt="Ярослав", task=Task.TRANSCRIBE)
    job, _ = await submit(
        world.services, upload, extension=".ogg", origin=Origin.http(), request=asked
    )
    assert (job.language_requested, job.prompt, job.task) == ("ru", "Ярослав", Task.TRANSCRIBE)
    done = await world.run_to_end(job.id)
    assert done.state is State.DONE
    assert world.recognizer.requests == [asked]
    assert done.language == "ru"
