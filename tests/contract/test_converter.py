"""The converter contract, run over every converter adapter."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from tests.support import media
from transcriber_adapters.ffmpeg import FfmpegConverter
from transcriber_adapters.memory.converter import BYTES_PER_SECOND, MemoryConverter
from transcriber_contracts.converter import (
    ConverterContract,
    MakeGarbage,
    MakeLimitedConverter,
    MakeRecording,
)


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
