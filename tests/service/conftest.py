"""Fixtures for tests that run the real service in a subprocess on 127.0.0.1."""

from __future__ import annotations

import pytest

from tests.support.media import generate, tone


@pytest.fixture(scope="session")
def recording(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    """A real 1-second MP3 tone, as a sender would upload it."""
    return tone(tmp_path_factory.mktemp("media") / "tone.mp3", 1).read_bytes()


@pytest.fixture(scope="session")
def long_recording(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    """Ten minutes of 16 kHz mono WAV: ffmpeg takes seconds to convert it, long enough to hit."""
    target = tmp_path_factory.mktemp("media") / "long.wav"
    return generate(
        target, "-f", "lavfi", "-i", "sine=frequency=440:duration=600", "-ac", "1", "-ar", "16000"
    ).read_bytes()
