"""Voices remembered (SPEC §25): prints compared, speakers named after their owner's voices."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import attrs
import pytest

from tests.support.world import World, make_world
from transcriber_adapters.memory import MemoryRecognizer, MemoryVoiceStore
from transcriber_adapters.memory.diarizer import MemoryDiarizer
from transcriber_core import voices
from transcriber_core.entities import AUTO_SPEAKERS, Print, SpeakerPrint, State, Turn, Voice
from transcriber_core.errors import JobNotFound, VoiceNotFound, VoiceRefused
from transcriber_core.ports import JobRepository
from transcriber_core.prints import combined, match, similarity
from transcriber_core.speakers import rename_speakers

T0 = datetime(2026, 12, 5, tzinfo=UTC)
ALICE = "person:" + "a" * 57
BOB = "person:" + "b" * 57


def _voice(voice_id: str, name: str = "Diane", owner: str = ALICE) -> Voice:
    return Voice(id=voice_id, owner=owner, name=name, created=T0)


def _axis(index: int, dims: int = 4) -> Print:
    return tuple(1.0 if i == index else 0.0 for i in range(dims))


def test_match_takes_the_best_pair_first_one_voice_each() -> None:
    """Two speakers near one voice: only the nearer is named; the other voice goes to the other."""
    prints = {"S1": (0.9, 0.1, 0.0, 0.0), "S2": (0.95, 0.0, 0.3, 0.0)}
    kept = [(_voice("v1"), (1.0, 0.0, 0.0, 0.0)), (_voice("v2", "Bob"), (0.8, 0.0, 0.6, 0.0))]
    found = match(prints, kept, threshold=0.5)
    assert similarity(prints["S2"], kept[0][1]) > similarity(prints["S1"], kept[0][1]) - 0.1
    assert {speaker: voice.id for speaker, voice in found.items()} == {"S1": "v1", "S2": "v2"}


def test_match_below_the_threshold_names_nobody() -> None:
    """A speaker less similar than the threshold to every voice stays unmatched."""
    found = match({"S1": (0.6, 0.8, 0.0, 0.0)}, [(_voice("v1"), _axis(0))], threshold=0.61)
    assert found == {}
    found = match({"S1": (0.6, 0.8, 0.0, 0.0)}, [(_voice("v1"), _axis(0))], threshold=0.6)
    assert list(found) == ["S1"]


def test_one_voice_never_names_two_speakers() -> None:
    """Two speakers with the same print and one voice: exactly one of them is named."""
    found = match({"S1": _axis(0), "S2": _axis(0)}, [(_voice("v1"), _axis(0))], threshold=0.5)
    assert list(found) == ["S1"]


def test_prints_of_another_encoder_never_match() -> None:
    """A voice kept from an encoder of another length is never matched, nor added to."""
    assert match({"S1": _axis(0, 3)}, [(_voice("v1"), _axis(0, 4))], threshold=-1.0) == {}
    assert combined(_axis(0, 4), (0.0, 3.0, 4.0)) == (0.0, 0.6, 0.8)
    assert combined(_axis(0), (0.0, 2.0, 0.0, 0.0)) == (1.0, 1.0, 0.0, 0.0)


def _world(tmp_path: Path, repo: JobRepository, prints: dict[str, Print]) -> World:
    world = make_world(tmp_path, repo=repo)
    twin = MemoryDiarizer(
        [Turn(speaker="a", start=0.0, end=0.8), Turn(speaker="b", start=0.8, end=100.0)], prints
    )
    store = MemoryVoiceStore()
    world.services = attrs.evolve(world.services, diarizer=twin, voices=store)
    return world


async def test_a_new_recording_names_the_owners_voice(tmp_path: Path, repo: JobRepository) -> None:
    """A voice remembered from one recording names the matching speaker of the owner's next."""
    world = _world(tmp_path, repo, {"a": (0.0, 3.0, 4.0, 0.0), "b": _axis(0)})
    first = await world.submit(b"x" * 32_000, speakers_wanted=AUTO_SPEAKERS, owner=ALICE)
    first = await world.run_to_end(first.id)
    assert first.prints == (
        SpeakerPrint(speaker="S1", vector=(0.0, 0.6, 0.8, 0.0)),
        SpeakerPrint(speaker="S2", vector=_axis(0)),
    )
    store = world.services.voices
    assert store is not None
    made = await voices.remember_voice(
        world.services, store, owner=ALICE, job_id=first.id, speaker="S2", name=" Diane "
    )
    assert (made.name, made.samples) == ("Diane", 1)
    named_first = await repo.get(first.id)
    assert named_first.speakers[1].name == "Diane"
    second = await world.submit(b"y" * 32_000, speakers_wanted=AUTO_SPEAKERS, owner=ALICE)
    second = await world.run_to_end(second.id)
    assert [(s.name, s.voice_id) for s in second.speakers] == [
        ("Speaker 1", None),
        ("Diane", made.id),
    ]


async def test_another_owners_voice_is_never_matched(tmp_path: Path, repo: JobRepository) -> None:
    """Bob's recording of the same voice is not named after Alice's voice, nor an ownerless one."""
    world = _world(tmp_path, repo, {"a": _axis(1), "b": _axis(0)})
    store = world.services.voices
    assert isinstance(store, MemoryVoiceStore)
    await store.add_voice(_voice("v1"), _axis(0))
    for owner in (BOB, None):
        job = await world.submit(b"z" * 32_000, speakers_wanted=AUTO_SPEAKERS, owner=owner)
        done = await world.run_to_end(job.id)
        assert [s.voice_id for s in done.speakers] == [None, None]


async def test_renaming_a_matched_speaker_changes_that_recording_only(
    tmp_path: Path, repo: JobRepository
) -> None:
    """A matched speaker renamed in one recording leaves the voice and other recordings alone."""
    world = _world(tmp_path, repo, {"a": _axis(1), "b": _axis(0)})
    store = world.services.voices
    assert isinstance(store, MemoryVoiceStore)
    await store.add_voice(_voice("v1"), _axis(0))
    jobs = []
    for data in (b"p" * 32_000, b"q" * 32_000):
        job = await world.submit(data, speakers_wanted=AUTO_SPEAKERS, owner=ALICE)
        jobs.append(await world.run_to_end(job.id))
    await rename_speakers(world.services, jobs[0], {"S2": "Di"})
    assert (await repo.get(jobs[0].id)).speakers[1].name == "Di"
    assert (await repo.get(jobs[1].id)).speakers[1].name == "Diane"
    assert [v.name for v in await store.list_voices(ALICE)] == ["Diane"]


async def test_a_voice_is_refused_from_what_cannot_give_one(
    tmp_path: Path, repo: JobRepository
) -> None:
    """Not done, no speakers, an unknown speaker, another's job: each refused with its code."""
    world = _world(tmp_path, repo, {"a": _axis(1), "b": _axis(0)})
    store = world.services.voices
    assert store is not None

    async def remember(job_id: str, speaker: object = "S1", owner: str = ALICE) -> Voice:
        return await voices.remember_voice(
            world.services, store, owner=owner, job_id=job_id, speaker=speaker, name="Diane"
        )

    waiting = await world.submit(b"w" * 32_000, speakers_wanted=AUTO_SPEAKERS, owner=ALICE)
    with pytest.raises(VoiceRefused) as refused:
        await remember(waiting.id)
    assert refused.value.code == "not_done"
    plain = await world.submit(b"v" * 32_000, owner=ALICE)
    assert (await world.run_to_end(plain.id)).state is State.DONE
    with pytest.raises(VoiceRefused) as refused:
        await remember(plain.id)
    assert refused.value.code == "no_speakers"
    await world.run_to_end(waiting.id)
    for speaker in ("S3", 1, None):
        with pytest.raises(VoiceRefused) as refused:
            await remember(waiting.id, speaker)
        assert refused.value.code == "bad_speaker"
    with pytest.raises(JobNotFound):
        await remember(waiting.id, owner=BOB)
    with pytest.raises(VoiceNotFound):
        await voices.add_sample(
            world.services, store, owner=ALICE, voice_id="nope", job_id=waiting.id, speaker="S1"
        )
    assert await store.list_voices(ALICE) == []


async def test_a_sample_adds_to_the_voice(tmp_path: Path, repo: JobRepository) -> None:
    """A second recording's speaker added to a voice counts a sample and is named after it."""
    world = _world(tmp_path, repo, {"a": _axis(1), "b": _axis(0)})
    store = world.services.voices
    assert store is not None
    jobs = []
    for data in (b"1" * 32_000, b"2" * 32_000):
        job = await world.submit(data, speakers_wanted=AUTO_SPEAKERS, owner=ALICE)
        jobs.append(await world.run_to_end(job.id))
    made = await voices.remember_voice(
        world.services, store, owner=ALICE, job_id=jobs[0].id, speaker="S1", name="Ann"
    )
    added = await voices.add_sample(
        world.services, store, owner=ALICE, voice_id=made.id, job_id=jobs[1].id, speaker="S1"
    )
    assert added.samples == 2
    assert (await repo.get(jobs[1].id)).speakers[0].voice_id == made.id


async def test_demo_recognizer_labels_voices_in_turns(tmp_path: Path, repo: JobRepository) -> None:
    """``[memory] speakers``: sentences go to voices in turn, each voice with its own print."""
    world = make_world(tmp_path, repo=repo)
    demo = MemoryRecognizer(text="One two. Three four. Five six. Seven.", speakers=2)
    world.services = attrs.evolve(world.services, recognizer=demo)
    job = await world.submit(b"x" * 32_000, speakers_wanted=AUTO_SPEAKERS)
    done = await world.run_to_end(job.id)
    assert [w.speaker for w in done.words] == ["S1", "S1", "S2", "S2", "S1", "S1", "S2"]
    assert [s.name for s in done.speakers] == ["Speaker 1", "Speaker 2"]
    first, second = (p.vector for p in done.prints)
    assert similarity(first, second) == 0.0
    again = await world.submit(b"y" * 32_000, speakers_wanted=3)
    again_done = await world.run_to_end(again.id)
    assert len(again_done.speakers) == 3
    assert again_done.prints[0] == done.prints[0]
    unasked = await world.run_to_end((await world.submit(b"z" * 32_000)).id)
    assert (unasked.speakers, unasked.prints) == ((), ())


async def test_demo_default_text_has_a_sentence_a_voice(
    tmp_path: Path, repo: JobRepository
) -> None:
    """With voices asked for, the demo's own text has a sentence for each, so each speaks."""
    assert not MemoryRecognizer().abilities.speakers
    world = make_world(tmp_path, repo=repo)
    demo = MemoryRecognizer(speakers=3)
    assert demo.abilities.speakers
    world.services = attrs.evolve(world.services, recognizer=demo)
    job = await world.submit(b"x" * 32_000, speakers_wanted=AUTO_SPEAKERS)
    done = await world.run_to_end(job.id)
    assert [s.id for s in done.speakers] == ["S1", "S2", "S3"]
    assert done.text is not None
    assert done.text.startswith("A recording of ")
