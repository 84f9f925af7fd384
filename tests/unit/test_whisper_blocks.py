"""Whisper's blocks never cut a word: each ends in a pause the VAD hears (ADR 42).

The recording is made so that where each word is said is known: espeak-ng
says each sentence of the test story on its own, and they are joined with
half a second of silence; within a sentence espeak leaves no pause long
enough to cut in. Whisper tiny.en comes from its package.
"""

from __future__ import annotations

import asyncio
import subprocess
import threading
import wave
from datetime import UTC, datetime
from pathlib import Path

import attrs
import pytest

from tests.support.speech import STORY, espeak, tiny_en_model, word_error_rate, words_of
from transcriber_adapters import ffmpeg, whisper
from transcriber_adapters.filesystem import FilesystemFileStore
from transcriber_adapters.whisper import WhisperRecognizer, WhisperSettings
from transcriber_core.ports import Recognized

T0 = datetime(2026, 1, 1, tzinfo=UTC)
#: The silence between two sentences.
GAP_SECONDS = 0.5
#: Block lengths to try; each nominal end falls inside a sentence (checked below).
BLOCKS = (9.0, 13.0, 17.0)


@attrs.frozen
class Said:
    """The recording as the converter's PCM, and where each sentence is said in it."""

    path: Path
    spans: tuple[tuple[float, float], ...]

    def sentence_at(self, moment: float) -> int | None:
        return next((i for i, (a, b) in enumerate(self.spans) if a <= moment <= b), None)


@pytest.fixture(autouse=True)
def offline(monkeypatch: pytest.MonkeyPatch) -> None:
    """No test here may reach the model hub."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


def _trimmed(sentence: str, target: Path) -> tuple[bytes, int]:
    """``sentence`` said by espeak-ng as 16-bit mono samples, quiet start and end cut off."""
    subprocess.run(
        [espeak(), "-v", "en-us", "-s", "160", "-w", str(target), sentence],
        check=True,
        capture_output=True,
        timeout=30,
    )
    with wave.open(str(target), "rb") as reader:
        rate, frames = reader.getframerate(), reader.readframes(reader.getnframes())
    samples = memoryview(frames).cast("h")
    loud = [i for i, value in enumerate(samples) if abs(value) > 300]
    return frames[loud[0] * 2 : (loud[-1] + 1) * 2], rate


@pytest.fixture(scope="module")
def said(tmp_path_factory: pytest.TempPathFactory) -> Said:
    """The story, sentence by sentence with known gaps, converted to PCM (about 35 s)."""
    folder = tmp_path_factory.mktemp("speech")
    pieces = [_trimmed(sentence, folder / f"s{i}.wav") for i, sentence in enumerate(STORY)]
    rate = pieces[0][1]
    silence = b"\0\0" * int(GAP_SECONDS * rate)
    spans, joined, at = [], bytearray(silence), GAP_SECONDS
    for frames, _ in pieces:
        seconds = len(frames) / 2 / rate
        spans.append((at, at + seconds))
        joined += frames + silence
        at += seconds + GAP_SECONDS
    source = folder / "story.wav"
    with wave.open(str(source), "wb") as writer:
        writer.setnchannels(1)
        writer.setsampwidth(2)
        writer.setframerate(rate)
        writer.writeframes(bytes(joined))
    target = folder / "story-pcm.wav"
    asyncio.run(ffmpeg.FfmpegConverter(output=ffmpeg.PCM).convert(source, target))
    return Said(path=target, spans=tuple(spans))


async def _recognize(said: Said, tmp_path: Path, block_seconds: float) -> Recognized:
    store = FilesystemFileStore(tmp_path / "files", staging_dir=tmp_path / "staging")
    record = await store.put("speech", ".wav", said.path, now=T0)
    settings = WhisperSettings(model_dir=tiny_en_model(), beam_size=1, temperatures=(0.0,))
    recognizer = WhisperRecognizer(store, settings, block_seconds=block_seconds)
    started = await recognizer.start(record, duration=None)
    assert isinstance(started.outcome, Recognized)
    return started.outcome


@pytest.fixture(scope="module")
def whole(said: Said, tmp_path_factory: pytest.TempPathFactory) -> Recognized:
    """The recording heard in one block: what each cut recording is compared with."""
    return asyncio.run(_recognize(said, tmp_path_factory.mktemp("whole"), 600.0))


def _heard_in(result: Recognized, span: tuple[float, float]) -> list[str]:
    start, end = span
    inside = [w.text for w in result.words if start - 0.3 <= (w.start + w.end) / 2 <= end + 0.3]
    return words_of(" ".join(inside))


def test_each_plain_cut_would_fall_inside_a_sentence(said: Said) -> None:
    """The test is sharp: cutting at each block length's end would split a sentence."""
    assert all(said.sentence_at(seconds) is not None for seconds in BLOCKS)


@pytest.mark.parametrize("block_seconds", BLOCKS)
def test_blocks_end_between_sentences(said: Said, block_seconds: float) -> None:
    """Every block starts in a silence between two sentences, none inside one."""
    offsets = [offset for offset, _ in whisper.blocks(said.path, threading.Event(), block_seconds)]
    assert len(offsets) >= 2, "the recording was not cut at all"
    for offset in offsets[1:]:
        assert said.sentence_at(offset) is None, f"the cut at {offset:.2f} s is inside a sentence"


# A real model on 2 CPUs that other jobs share: more than the default 60 s may pass.
@pytest.mark.timeout(180)
@pytest.mark.parametrize("block_seconds", BLOCKS)
async def test_a_word_at_a_block_edge_is_not_lost(
    said: Said, whole: Recognized, tmp_path: Path, block_seconds: float
) -> None:
    """The sentence said across a block's nominal end is heard whole, as in one block."""
    index = said.sentence_at(block_seconds)
    assert index is not None
    reference = STORY[index]
    blocked = await _recognize(said, tmp_path, block_seconds)
    heard_whole = " ".join(_heard_in(whole, said.spans[index]))
    heard_blocked = " ".join(_heard_in(blocked, said.spans[index]))
    # Without the text before it as context, a word may be heard a little differently.
    allowed = word_error_rate(reference, heard_whole) + 1 / len(words_of(reference))
    assert word_error_rate(reference, heard_blocked) <= allowed, (heard_whole, heard_blocked)
