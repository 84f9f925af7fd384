"""The converter contract, run over every converter adapter."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from tests.support import media
from transcriber_adapters import ffmpeg
from transcriber_adapters.ffmpeg import FfmpegConverter
from transcriber_adapters.memory.converter import BYTES_PER_SECOND, MemoryConverter
from transcriber_contracts.converter import (
    ConverterContract,
    GappedAudio,
    MakeGarbage,
    MakeLimitedConverter,
    MakeRecording,
)
from transcriber_core.ports import Silence


class TestMemoryConverter(ConverterContract):
    """The fake converter keeps the contract: size is duration, a marker is garbage."""

    duration_tolerance = 0.001

    @pytest.fixture
    def converter(self) -> MemoryConverter:
        return MemoryConverter()

    @pytest.fixture
    def make_limited_converter(self) -> MakeLimitedConverter:
        return lambda limits: MemoryConverter(limits=limits)

    @pytest.fixture
    def make_recording(self, tmp_path: Path) -> MakeRecording:
        def make(seconds: float) -> Path:
            path = tmp_path / f"recording-{seconds}.raw"
            path.write_bytes(b"\x01" * round(seconds * BYTES_PER_SECOND))
            return path

        return make

    @pytest.fixture
    def make_garbage(self, tmp_path: Path) -> MakeGarbage:
        def make() -> Path:
            path = tmp_path / "garbage.bin"
            path.write_bytes(b"NOT AUDIO, just a text file")
            return path

        return make

    @pytest.fixture
    async def gapped_audio(self, tmp_path: Path) -> GappedAudio:
        converter = MemoryConverter(silences=[Silence(start=2.0, end=3.0)])
        source = tmp_path / "gapped.raw"
        source.write_bytes(b"\x01" * 5 * BYTES_PER_SECOND)
        audio = tmp_path / "gapped.ogg"
        await converter.convert(source, audio)
        return GappedAudio(converter=converter, audio=audio)


class TestFfmpegConverter(ConverterContract):
    """ffmpeg keeps the contract on real media it generated itself."""

    @pytest.fixture
    def converter(self) -> FfmpegConverter:
        return FfmpegConverter()

    @pytest.fixture
    def make_limited_converter(self) -> MakeLimitedConverter:
        return lambda limits: FfmpegConverter(limits=limits)

    @pytest.fixture
    def make_recording(self, tmp_path: Path) -> MakeRecording:
        def make(seconds: float) -> Path:
            return media.tone(tmp_path / f"tone-{seconds}.mp3", seconds)

        return make

    @pytest.fixture
    def make_garbage(self, tmp_path: Path) -> MakeGarbage:
        def make() -> Path:
            path = tmp_path / "garbage.bin"
            path.write_bytes(random.Random(20260101).randbytes(20_000))
            return path

        return make

    @pytest.fixture
    async def gapped_audio(self, tmp_path: Path) -> GappedAudio:
        source = media.generate(
            tmp_path / "gapped.wav",
            *("-f", "lavfi", "-i", "aevalsrc=sin(2*PI*440*t)*(lt(t\\,2)+gte(t\\,3)):s=16000:d=5"),
        )
        converter = FfmpegConverter()
        audio = tmp_path / "gapped.ogg"
        await converter.convert(source, audio)
        return GappedAudio(converter=converter, audio=audio)


class TestFfmpegPcmConverter(TestFfmpegConverter):
    """ffmpeg writing 16 kHz PCM for a local recognizer keeps the same contract (ADR 42)."""

    @pytest.fixture
    def converter(self) -> FfmpegConverter:
        return FfmpegConverter(output=ffmpeg.PCM)

    @pytest.fixture
    def make_limited_converter(self) -> MakeLimitedConverter:
        return lambda limits: FfmpegConverter(limits=limits, output=ffmpeg.PCM)

    @pytest.fixture
    async def gapped_audio(self, tmp_path: Path) -> GappedAudio:
        source = media.generate(
            tmp_path / "gapped.wav",
            *("-f", "lavfi", "-i", "aevalsrc=sin(2*PI*440*t)*(lt(t\\,2)+gte(t\\,3)):s=16000:d=5"),
        )
        converter = FfmpegConverter(output=ffmpeg.PCM)
        audio = tmp_path / "gapped-out.wav"
        await converter.convert(source, audio)
        return GappedAudio(converter=converter, audio=audio)
