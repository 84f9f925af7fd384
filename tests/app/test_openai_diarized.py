"""``/v1`` speakers: ``diarized_json`` when speakers can be told, named cues in SRT and VTT."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import attrs
import pytest

from tests.support.world import make_world
from transcriber_adapters.memory.diarizer import MemoryDiarizer
from transcriber_app.config import Config, DiarizationConfig
from transcriber_app.web import openai_api
from transcriber_app.web.openai_errors import OpenAIFault
from transcriber_core.entities import AUTO_SPEAKERS, Job, Origin, Speaker, State, Turn, Word
from transcriber_core.languages import Task

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def _runtime(tmp_path: Path, *, diarizer: bool, labels: bool = False, default: str = "off") -> Any:
    """What ``parse_ask`` reads of a runtime: the services and the config."""
    world = make_world(tmp_path)
    services = world.services
    if diarizer:
        services = attrs.evolve(
            services, diarizer=MemoryDiarizer([Turn(speaker="a", start=0, end=9)])
        )
    if labels:
        abilities = attrs.evolve(world.recognizer.abilities, speakers=True)
        world.recognizer.abilities = abilities  # type: ignore[misc]
    return SimpleNamespace(
        services=services, config=Config(diarization=DiarizationConfig(default=default))
    )


def _fields(response_format: str) -> dict[str, tuple[str, ...]]:
    return {"model": ("whisper-1",), "response_format": (response_format,)}


def test_diarized_json_without_a_diarizer_is_refused(tmp_path: Path) -> None:
    """No diarizer and a recognizer that labels nobody: 400 diarization_unavailable, as before."""
    runtime = _runtime(tmp_path, diarizer=False)
    with pytest.raises(OpenAIFault) as refused:
        openai_api.parse_ask(runtime, _fields("diarized_json"), task=Task.TRANSCRIBE)
    fault = refused.value
    assert (fault.status, fault.code, fault.param) == (
        400,
        "diarization_unavailable",
        "response_format",
    )
    assert "no diarizer" in fault.message


def test_diarized_json_with_a_diarizer_wants_speakers_auto(tmp_path: Path) -> None:
    """With a diarizer, diarized_json runs the job with speakers auto; json keeps the default."""
    runtime = _runtime(tmp_path, diarizer=True)
    asked = openai_api.parse_ask(runtime, _fields("diarized_json"), task=Task.TRANSCRIBE)
    assert asked.speakers == AUTO_SPEAKERS
    plain = openai_api.parse_ask(runtime, _fields("srt"), task=Task.TRANSCRIBE)
    assert plain.speakers is None


def test_a_recognizer_that_labels_speakers_is_enough(tmp_path: Path) -> None:
    """SpeechKit v3 labels speakers itself: diarized_json needs no diarizer then."""
    runtime = _runtime(tmp_path, diarizer=False, labels=True)
    asked = openai_api.parse_ask(runtime, _fields("diarized_json"), task=Task.TRANSCRIBE)
    assert asked.speakers == AUTO_SPEAKERS


def test_other_formats_take_the_configured_default(tmp_path: Path) -> None:
    """[diarization] default applies to /v1's other formats when speakers can be labelled."""
    runtime = _runtime(tmp_path, diarizer=True, default="2")
    assert openai_api.parse_ask(runtime, _fields("vtt"), task=Task.TRANSCRIBE).speakers == 2
    unlabelled = _runtime(tmp_path / "none", diarizer=False, default="auto")
    assert openai_api.parse_ask(unlabelled, _fields("vtt"), task=Task.TRANSCRIBE).speakers is None


def _dialogue_job() -> Job:
    """A done job of two speakers, the first renamed."""
    words = (
        Word(text="Hello", start=0.0, end=0.4, speaker="S1"),
        Word(text="there.", start=0.5, end=0.9, speaker="S1"),
        Word(text="Hi", start=1.0, end=1.3, speaker="S2"),
        Word(text="Anna.", start=1.4, end=1.8, speaker="S2"),
    )
    return Job(
        id="job-1",
        state=State.DONE,
        origin=Origin.http(),
        text="Hello there. Hi Anna.",
        words=words,
        duration=2.5,
        speakers_wanted=AUTO_SPEAKERS,
        speakers=(Speaker(id="S1", name="Diane"), Speaker(id="S2", name="Speaker 2")),
        created=T0,
        updated=T0,
    )


def _ask(response_format: str) -> openai_api.Ask:
    return openai_api.Ask(response_format=openai_api.ResponseFormat(response_format))


def test_diarized_json_has_segments_with_speaker_names() -> None:
    """OpenAI's diarized_json shape: task, duration, text, typed segments with speakers, usage."""
    body = json.loads(bytes(openai_api.render(_dialogue_job(), _ask("diarized_json")).body))
    assert body == {
        "task": "transcribe",
        "duration": 2.5,
        "text": "Hello there. Hi Anna.",
        "segments": [
            {
                "type": "transcript.text.segment",
                "id": "seg_0",
                "start": 0.0,
                # Cues run on to the next one's start, as the service's subtitles do.
                "end": 1.0,
                "text": "Hello there.",
                "speaker": "Diane",
            },
            {
                "type": "transcript.text.segment",
                "id": "seg_1",
                "start": 1.0,
                "end": 2.0,
                "text": "Hi Anna.",
                "speaker": "Speaker 2",
            },
        ],
        "usage": {"type": "duration", "seconds": 3},
    }


def test_srt_and_vtt_carry_the_speakers_names() -> None:
    """SRT names the speaker at each change, VTT has voice spans; the rename shows."""
    srt = bytes(openai_api.render(_dialogue_job(), _ask("srt")).body).decode()
    assert "Diane: Hello there.\n" in srt
    assert "Speaker 2: Hi Anna.\n" in srt
    vtt = bytes(openai_api.render(_dialogue_job(), _ask("vtt")).body).decode()
    assert "<v Diane>Hello there." in vtt
    assert "<v Speaker 2>Hi Anna." in vtt
