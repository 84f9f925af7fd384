"""Speakers (SPEC §18): the field's values, words labelled by turns, renames, every format."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import attrs
import pytest

from tests.support.world import make_world
from transcriber_adapters.memory.diarizer import MemoryDiarizer
from transcriber_core import subtitles
from transcriber_core.entities import AUTO_SPEAKERS, Job, Origin, Speaker, State, Turn, Word
from transcriber_core.ports import JobRepository
from transcriber_core.rendering import TranscriptFormat, render
from transcriber_core.speakers import (
    BadSpeakers,
    label_words,
    number_speakers,
    parse_wanted,
    rename,
    wanted_text,
)

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def _word(text: str, start: float, end: float, speaker: str | None = None) -> Word:
    return Word(text=text, start=start, end=end, speaker=speaker)


@pytest.mark.parametrize(
    ("value", "wanted"),
    [("off", None), ("auto", AUTO_SPEAKERS), ("AUTO", AUTO_SPEAKERS), ("1", 1), (" 10 ", 10)],
)
def test_speakers_values_taken(value: str, wanted: int | None) -> None:
    """auto, off and 1 to 10 are taken, whatever the case and spaces, and spelled back."""
    assert parse_wanted(value) == wanted
    assert parse_wanted(wanted_text(wanted)) == wanted


@pytest.mark.parametrize("value", ["0", "11", "two", "", "-1", "1.5", "٣"])
def test_speakers_values_refused(value: str) -> None:
    """Anything else is refused, the message naming what is accepted."""
    with pytest.raises(BadSpeakers, match="auto, off or a number from 1 to 10"):
        parse_wanted(value)


def test_words_take_the_turn_they_overlap_most() -> None:
    """A word across a change of turn goes to the voice it overlaps longer."""
    turns = [Turn(speaker="x", start=0.0, end=1.0), Turn(speaker="y", start=1.0, end=2.0)]
    words = [_word("a", 0.1, 0.5), _word("b", 0.8, 1.5), _word("c", 0.9, 1.1 - 0.15)]
    labelled, speakers = label_words(words, turns)
    assert [w.speaker for w in labelled] == ["S1", "S2", "S1"]
    assert speakers == (Speaker(id="S1", name="Speaker 1"), Speaker(id="S2", name="Speaker 2"))


def test_speakers_numbered_by_first_word() -> None:
    """Whatever the diarizer calls its voices, S1 is the first to speak, S2 the next."""
    turns = [Turn(speaker="late", start=5.0, end=6.0), Turn(speaker="early", start=0.0, end=1.0)]
    labelled, speakers = label_words([_word("a", 0.2, 0.4), _word("b", 5.2, 5.4)], turns)
    assert [w.speaker for w in labelled] == ["S1", "S2"]
    assert [s.id for s in speakers] == ["S1", "S2"]


def test_word_in_a_gap_takes_the_nearest_turn() -> None:
    """A word no turn covers (the VAD cut it short) goes to the closest turn."""
    turns = [Turn(speaker="x", start=0.0, end=1.0), Turn(speaker="y", start=3.0, end=4.0)]
    labelled, _ = label_words([_word("near-x", 1.1, 1.3), _word("near-y", 2.6, 2.9)], turns)
    assert [w.speaker for w in labelled] == ["S1", "S2"]


def test_a_recognizers_own_labels_are_numbered_by_first_word() -> None:
    """Labels a recognizer gave (SpeechKit's channel tags) become S1, S2… in speaking order."""
    words = [
        Word(text="a", start=0.0, end=0.5, speaker="1"),
        Word(text="b", start=0.5, end=1.0, speaker="0"),
        Word(text="c", start=1.0, end=1.5, speaker=None),
        Word(text="d", start=1.5, end=2.0, speaker="1"),
    ]
    labelled, speakers = number_speakers(words)
    assert [w.speaker for w in labelled] == ["S1", "S2", None, "S1"]
    assert speakers == (Speaker(id="S1", name="Speaker 1"), Speaker(id="S2", name="Speaker 2"))


def test_no_turns_leave_words_unlabelled() -> None:
    """No speech found: no speakers, and words keep no speaker."""
    labelled, speakers = label_words([_word("a", 0.0, 1.0, "S9")], [])
    assert speakers == ()
    assert labelled[0].speaker is None


def test_rename() -> None:
    """A rename changes the names given and keeps the others, stripped."""
    speakers = (Speaker(id="S1", name="Speaker 1"), Speaker(id="S2", name="Speaker 2"))
    assert rename(speakers, {"S2": "  Diane "}) == (speakers[0], Speaker(id="S2", name="Diane"))


@pytest.mark.parametrize(
    ("names", "problem"),
    [
        ({"S3": "Bob"}, "no speaker 'S3'"),
        ({"S1": "x" * 65}, "at most 64 characters"),
        ({"S1": "Bo\nb"}, "control characters"),
        ({"S1": "Bo\u202eb"}, "control characters"),
        ({"S1": "   "}, "must not be empty"),
        ({"S1": 5}, "must be a string"),
        ({}, "name at least one speaker"),
    ],
)
def test_rename_refused(names: dict[str, object], problem: str) -> None:
    """A bad rename is refused naming the problem, and nothing is renamed."""
    with pytest.raises(BadSpeakers, match=problem):
        rename((Speaker(id="S1", name="Speaker 1"),), names)


def _dialogue_job() -> Job:
    words = (
        _word("Hello", 0.0, 0.4, "S1"),
        _word("there.", 0.5, 0.9, "S1"),
        _word("Hi", 1.0, 1.3, "S2"),
        _word("Anna.", 1.4, 1.8, "S2"),
        _word("Bye.", 2.0, 2.3, "S1"),
    )
    return Job(
        id="job-1",
        state=State.DONE,
        origin=Origin.http(),
        text="Hello there. Hi Anna. Bye.",
        words=words,
        duration=3.0,
        speakers_wanted=AUTO_SPEAKERS,
        speakers=(Speaker(id="S1", name="Diane"), Speaker(id="S2", name="Speaker 2")),
        created=T0,
        updated=T0,
    )


def test_a_cue_never_spans_two_speakers() -> None:
    """Words that would fit one cue are cut where the speaker changes."""
    job = _dialogue_job()
    found = subtitles.cues(job.words, text=job.text or "", duration=job.duration)
    assert [(c.text, c.speaker) for c in found] == [
        ("Hello there.", "S1"),
        ("Hi Anna.", "S2"),
        ("Bye.", "S1"),
    ]


def test_formats_show_the_speakers() -> None:
    """txt has a turn per paragraph, SRT names at each change, VTT voice spans, JSON ids."""
    job = _dialogue_job()
    assert render(job, TranscriptFormat.TXT).decode() == (
        "Diane: Hello there.\n\nSpeaker 2: Hi Anna.\n\nDiane: Bye.\n"
    )
    srt = render(job, TranscriptFormat.SRT).decode()
    assert "Diane: Hello there.\n" in srt
    assert "Speaker 2: Hi Anna.\n" in srt
    vtt = render(job, TranscriptFormat.VTT).decode()
    assert "<v Diane>Hello there.\n" in vtt
    assert "<v Speaker 2>Hi Anna.\n" in vtt
    document = json.loads(render(job, TranscriptFormat.JSON))
    assert document["speakers"] == [
        {"id": "S1", "name": "Diane"},
        {"id": "S2", "name": "Speaker 2"},
    ]
    assert [w["speaker"] for w in document["words"]] == ["S1", "S1", "S2", "S2", "S1"]
    assert [s["speaker"] for s in document["segments"]] == ["S1", "S2", "S1"]


def test_vtt_voice_name_escaped() -> None:
    """A name with markup characters cannot open a tag in the WebVTT file."""
    job = attrs.evolve(_dialogue_job(), speakers=(Speaker(id="S1", name="<b>&"),))
    assert "<v &lt;b&gt;&amp;>Hello" in render(job, TranscriptFormat.VTT).decode()


def test_formats_without_speakers_unchanged() -> None:
    """Labelling off: no names in any format, and no speaker keys in the JSON."""
    job = _dialogue_job()
    job = attrs.evolve(
        job, speakers=(), words=tuple(attrs.evolve(w, speaker=None) for w in job.words)
    )
    assert render(job, TranscriptFormat.TXT).decode() == "Hello there. Hi Anna. Bye.\n"
    assert ":" not in render(job, TranscriptFormat.SRT).decode().split("\n", 2)[2]
    assert "<v" not in render(job, TranscriptFormat.VTT).decode()
    document = json.loads(render(job, TranscriptFormat.JSON))
    assert "speakers" not in document
    assert all("speaker" not in item for item in document["words"] + document["segments"])


async def test_pipeline_labels_and_stores_speakers(tmp_path: Path, repo: JobRepository) -> None:
    """A job that asks for speakers comes out done with labelled words, stored as labelled."""
    world = make_world(tmp_path, repo=repo)
    # The demo text is timed across the recording: the first voice has the first half.
    twin = MemoryDiarizer(
        [Turn(speaker="a", start=0.0, end=0.8), Turn(speaker="b", start=0.8, end=100.0)]
    )
    world.services = attrs.evolve(world.services, diarizer=twin)
    job = await world.submit(b"x" * 32_000, speakers_wanted=AUTO_SPEAKERS)
    done = await world.run_to_end(job.id)
    assert done.state is State.DONE
    assert [s.id for s in done.speakers] == ["S1", "S2"]
    assert done.words[0].speaker == "S1"
    assert done.words[-1].speaker == "S2"
    assert twin.calls[0][1] is None  # auto: the diarizer finds the count
    assert await repo.get(job.id) == done


async def test_pipeline_without_speakers_asks_nothing(tmp_path: Path, repo: JobRepository) -> None:
    """A job that asked for no speakers never reaches the diarizer, and its words have none."""
    world = make_world(tmp_path, repo=repo)
    twin = MemoryDiarizer([Turn(speaker="a", start=0.0, end=100.0)])
    world.services = attrs.evolve(world.services, diarizer=twin)
    job = await world.submit(b"x" * 32_000)
    done = await world.run_to_end(job.id)
    assert twin.calls == []
    assert done.speakers == ()
    assert all(word.speaker is None for word in done.words)
