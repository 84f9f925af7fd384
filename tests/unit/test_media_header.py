"""The intake's header probe on real files made by ffmpeg: what it reads, and what it refuses."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from tests.support.media import encoded, generate, tone, video
from transcriber_adapters.media_header import HeaderProbe, read_declared_duration


@pytest.mark.parametrize(
    ("name", "codec"),
    [
        ("voice.wav", ()),
        ("voice.ogg", ("-c:a", "libopus")),
        ("music.ogg", ("-c:a", "libvorbis")),
        ("voice.m4a", ("-c:a", "aac")),
    ],
)
async def test_declared_duration_of_audio_containers(
    tmp_path: Path, name: str, codec: tuple[str, ...]
) -> None:
    """WAV, Ogg/Opus (a Telegram voice note), Ogg/Vorbis and M4A declare their length."""
    path = encoded(tmp_path / name, 7.5, *codec)
    seconds = await HeaderProbe().declared_duration(path)
    assert seconds == pytest.approx(7.5, abs=0.05)


def test_declared_duration_of_a_video(tmp_path: Path) -> None:
    """An MP4 video declares its length in mvhd."""
    assert read_declared_duration(video(tmp_path / "clip.mp4", 6.0)) == pytest.approx(6.0, abs=0.1)


def test_a_two_hour_wav_is_read_from_its_header(tmp_path: Path) -> None:
    """8 kHz 8-bit mono: the data chunk over the byte rate, without reading the samples."""
    path = generate(
        tmp_path / "long.wav",
        *("-f", "lavfi", "-i", "anullsrc=r=8000:cl=mono", "-t", "7200", "-c:a", "pcm_u8"),
    )
    assert read_declared_duration(path) == pytest.approx(7200, abs=0.01)


def test_formats_without_a_header_length_are_unknown(tmp_path: Path) -> None:
    """An MP3 (no length in its header here) is not guessed at: unknown."""
    assert read_declared_duration(tone(tmp_path / "song.mp3", 3.0)) is None


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"OggS",
        b"RIFF\x00\x00\x00\x00WAVE",
        b"RIFF\x24\x00\x00\x00WAVEdata\xff\xff\x00\x00",
        b"RIFF\x24\x00\x00\x00WAVEfmt \x10\x00\x00\x00" + bytes(16) + b"data\x10\x00\x00\x00",
        struct.pack(">I4s", 1, b"ftyp"),
        struct.pack(">I4s", 16, b"moov") + struct.pack(">I4s", 4, b"mvhd"),
        b"not a recording at all",
    ],
)
def test_odd_or_truncated_headers_are_unknown_not_errors(tmp_path: Path, data: bytes) -> None:
    """A truncated, zero-rate or nonsense header says nothing; the probe never raises."""
    path = tmp_path / "odd.bin"
    path.write_bytes(data)
    assert read_declared_duration(path) is None


def test_a_missing_file_is_unknown(tmp_path: Path) -> None:
    """A file that went away is unknown, not an error: intake goes on without a duration."""
    assert read_declared_duration(tmp_path / "gone.wav") is None
