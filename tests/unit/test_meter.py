"""The ffmpeg meter: a staged upload's decoded seconds, counted at intake for its quota (ADR 67)."""

from __future__ import annotations

import asyncio
import os
from datetime import timedelta
from pathlib import Path

import pytest

from tests.support import media
from tests.support.processes import children, group_members
from transcriber_adapters.ffmpeg import FfmpegConverter
from transcriber_core.errors import RecordingTooLong, UnreadableMedia
from transcriber_core.policy import DecodeLimits
from transcriber_core.usage import Measured

#: Far more than any of these tests needs: only ``within``'s own test is stopped by it.
AMPLE = timedelta(minutes=5)


async def test_counts_what_the_converter_would_measure(tmp_path: Path) -> None:
    """An AU file and a Matroska file whose timestamps restart both count their samples."""
    meter = FfmpegConverter()
    au = media.encoded(tmp_path / "a.au", 4.0, "-ar", "8000", "-c:a", "pcm_mulaw")
    counted = await meter.measure(au, up_to=100.0, within=AMPLE)
    assert counted.whole
    assert counted.counted == pytest.approx(4.0, abs=0.05)
    assert counted.most == pytest.approx(au.stat().st_size / 100.0)
    restarting = media.restarting_timestamps(tmp_path / "r.mka", 6.0)
    counted = await meter.measure(restarting, up_to=100.0, within=AMPLE)
    assert counted.whole
    assert counted.counted == pytest.approx(6.0, abs=0.1)


async def test_stops_just_past_what_it_was_asked_to_count(tmp_path: Path) -> None:
    """A recording longer than ``up_to`` is counted to ``up_to`` and no further, not whole."""
    source = media.encoded(tmp_path / "long.mp3", 30.0, "-ar", "16000", "-c:a", "libmp3lame")
    counted = await FfmpegConverter().measure(source, up_to=3.0, within=AMPLE)
    assert not counted.whole
    assert counted.counted == pytest.approx(3.0, abs=0.1)


async def test_a_ceiling_passed_keeps_the_worst_case(tmp_path: Path) -> None:
    """Stopped by ``within`` the answer is not whole and names the most the file may last."""
    source = media.encoded(tmp_path / "a.flac", 5.0, "-c:a", "flac")
    counted = await FfmpegConverter().measure(source, up_to=100.0, within=timedelta(0))
    assert not counted.whole
    assert counted.most == pytest.approx(source.stat().st_size / 100.0)


async def test_refuses_what_the_converter_refuses(tmp_path: Path) -> None:
    """A playlist naming another file, and a duration bomb, are refused as conversion would."""
    playlist = tmp_path / "list.m3u8"
    playlist.write_text("#EXTM3U\n#EXTINF:1,\nfile:/etc/hostname\n")
    with pytest.raises(UnreadableMedia):
        await FfmpegConverter().measure(playlist, up_to=100.0, within=AMPLE)
    bomb = media.one_hertz_wav(tmp_path / "bomb.wav", 20_000)
    limits = DecodeLimits(min_bytes_per_second=100.0)
    with pytest.raises(RecordingTooLong):
        await FfmpegConverter(limits=limits).measure(bomb, up_to=30_000.0, within=AMPLE)


async def test_a_measure_past_the_turns_waits_within_its_ceiling(tmp_path: Path) -> None:
    """With every turn taken, a measure starts no ffmpeg and ends at its ceiling, not whole."""
    started = tmp_path / "started"
    os.mkfifo(started)
    script = tmp_path / "fake-ffmpeg"
    runs = tmp_path / "runs"
    script.write_text(f"#!/bin/sh\necho run >> '{runs}'\necho up > '{started}'\nsleep 60 &\nwait\n")
    script.chmod(0o755)
    source = tmp_path / "in.mp3"
    source.write_bytes(b"x" * 1000)
    meter = FfmpegConverter(script, measures_at_once=1)
    holder = asyncio.create_task(meter.measure(source, up_to=100.0, within=AMPLE))
    # The stand-in says it runs: the one turn is taken.
    assert (await asyncio.wait_for(asyncio.to_thread(started.read_text), 60)).strip() == "up"
    [pid] = children(script.name)
    waited = await meter.measure(source, up_to=100.0, within=timedelta(seconds=1))
    assert waited == Measured(counted=0.0, whole=False, most=10.0)
    assert runs.read_text() == "run\n"
    holder.cancel()
    with pytest.raises(asyncio.CancelledError):
        await holder
    assert group_members(pid) == []
