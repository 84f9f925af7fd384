"""The language, prompt and task of a recording over ``POST /api/audio`` (SPEC §18).

The memory recognizer shows the plumbing (what was asked reaches the
recognizer and the status); Whisper shows the rules of a real model:
tiny.en knows English only and cannot translate, base translates Russian.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.service import Service, running_service
from tests.support.speech import base_model, speak, tiny_en_model

pytestmark = pytest.mark.slow

OFFLINE = {"HF_HUB_OFFLINE": "1"}
#: A letter of the Russian alphabet.
CYRILLIC = "[\u0430-\u044f\u0451]"
TEXT = "A known sentence."


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Service]:
    """The service on the memory recognizer with a known text."""
    with running_service(
        tmp_path_factory.mktemp("languages"), config={"memory": {"text": TEXT}}
    ) as started:
        started.check_answers()
        yield started


def upload(service: Service, recording: bytes, **fields: str) -> Any:
    """POST /api/audio with ``fields``; the answer."""
    with service.client() as client:
        return client.post("/api/audio", files={"file": ("a.mp3", recording)}, data=fields)


def test_the_status_shows_the_language_asked_and_heard(service: Service, recording: bytes) -> None:
    """language=RU is kept as "ru", reaches the recognizer, and both show in /api/status."""
    response = upload(service, recording, language="RU", prompt="Names: Ярослав")
    assert response.status_code == 202, response.text
    status = service.wait_for_job(response.json()["job_id"])
    assert (status["language_requested"], status["language"], status["task"]) == (
        "ru",
        "ru",
        "transcribe",
    )


def test_without_a_language_it_is_auto(service: Service, recording: bytes) -> None:
    """No language field: language_requested is auto."""
    status = service.wait_for_job(upload(service, recording).json()["job_id"])
    assert status["language_requested"] == "auto"


def test_translate_is_carried_to_the_recognizer(service: Service, recording: bytes) -> None:
    """task=translate ends with the memory recognizer's English."""
    status = service.wait_for_job(upload(service, recording, task="translate").json()["job_id"])
    assert (status["task"], status["text"]) == ("translate", "In English: " + TEXT)


@pytest.mark.parametrize(
    ("fields", "code"),
    [
        ({"language": "xx"}, "bad_language"),
        ({"language": "ru-RU"}, "bad_language"),
        ({"task": "summarise"}, "bad_task"),
        ({"prompt": "x" * 1001}, "bad_prompt"),
    ],
)
def test_a_bad_field_is_refused_and_nothing_is_kept(
    service: Service, recording: bytes, fields: dict[str, str], code: str
) -> None:
    """A refused language, task or prompt is a 400 with its code; no job, no file, no stub."""
    before = (service.stored_names(), service.query("SELECT count(*) FROM jobs"))
    response = upload(service, recording, **fields)
    assert response.status_code == 400
    assert response.json()["error"] == code
    assert (service.stored_names(), service.query("SELECT count(*) FROM jobs")) == before
    assert service.staging_files() == []


def test_bad_language_names_the_accepted_values(service: Service, recording: bytes) -> None:
    """The refusal lists auto and every code the recognizer knows."""
    message = upload(service, recording, language="xx").json()["message"]
    assert message == "language must be one of: auto, de, en, es, fr, it, kk, pt, ru, tr, uk"


def whisper(model: Path) -> dict[str, dict[str, Any]]:
    """A config running Whisper from ``model``, greedy (the fastest)."""
    return {
        "recognizer": {"kind": "whisper"},
        "whisper": {"model": str(model), "beam_size": 1},
    }


@pytest.mark.timeout(180)
def test_an_english_only_model_takes_english_only(tmp_path: Path) -> None:
    """tiny.en: language ru is refused naming auto and en; translation is refused saying why."""
    clip = speak("The quick brown fox jumps over the lazy dog.", tmp_path / "fox.ogg").read_bytes()
    with running_service(tmp_path / "run", config=whisper(tiny_en_model()), env=OFFLINE) as svc:
        refused = upload(svc, clip, language="ru")
        assert (refused.status_code, refused.json()["message"]) == (
            400,
            "language must be one of: auto, en",
        )
        cannot = upload(svc, clip, task="translate")
        assert cannot.status_code == 400
        assert cannot.json()["error"] == "translation_unsupported"
        assert "English-only" in cannot.json()["message"]
        done = svc.wait_for_job(upload(svc, clip, language="en").json()["job_id"], timeout=90)
    assert done["state"] == "done"
    assert "quick" in done["text"].lower()


@pytest.mark.timeout(300)
def test_a_multilingual_model_transcribes_or_translates_russian(tmp_path: Path) -> None:
    """Whisper base: a Russian clip in Cyrillic with language=ru, in Latin letters translated."""
    clip = speak(
        "Сегодня хорошая погода, и мы идём гулять в парк.",
        tmp_path / "ru.ogg",
        voice="ru",
    ).read_bytes()
    model = base_model(tmp_path / "base")
    with running_service(tmp_path / "run", config=whisper(model), env=OFFLINE) as svc:
        heard = upload(svc, clip, language="ru").json()["job_id"]
        heard_status = svc.wait_for_job(heard, timeout=120)
        english = upload(svc, clip, task="translate").json()["job_id"]
        english_status = svc.wait_for_job(english, timeout=120)
    assert heard_status["state"] == english_status["state"] == "done"
    assert re.search(CYRILLIC, heard_status["text"].lower()), heard_status["text"]
    assert english_status["task"] == "translate"
    assert not re.search(CYRILLIC, english_status["text"].lower()), english_status["text"]
    assert re.search("[a-z]{3}", english_status["text"].lower()), english_status["text"]
