"""Every length the converter judges is the audio it decoded, never the container's timestamps.

A Matroska file whose timestamps restart every 2 s (its clusters repeat)
once decoded to an hour while ffmpeg's clock said two seconds, so no
duration limit held (ADR 42). Each format the converter writes is checked.
"""

from __future__ import annotations

import subprocess
from datetime import timedelta
from pathlib import Path

import attrs
import pytest

from tests.support import media
from tests.support.processes import children
from tests.support.world import make_world
from transcriber_adapters import ffmpeg
from transcriber_adapters.ffmpeg import FfmpegConverter
from transcriber_core.entities import State
from transcriber_core.errors import RecordingTooLong
from transcriber_core.policy import DecodeLimits, Settings
from transcriber_core.worker import acquire_next, process

FORMATS = [ffmpeg.OPUS, ffmpeg.PCM]
IDS = ["opus", "pcm"]


@pytest.fixture(scope="module")
def restarting(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """60 s of a tone whose timestamps restart every 2 s."""
    folder = tmp_path_factory.mktemp("restarting")
    return media.restarting_timestamps(folder / "restarting.mkv", 60.0)


def _converter(output: ffmpeg.AudioFormat, **limits: float) -> FfmpegConverter:
    decode = DecodeLimits(
        max_duration=timedelta(seconds=limits.get("max_seconds", 28_800)),
        min_bytes_per_second=limits.get("min_bytes_per_second", 100),
    )
    return FfmpegConverter(limits=decode, output=output)


@pytest.mark.parametrize("output", FORMATS, ids=IDS)
async def test_duration_is_the_decoded_length(
    restarting: Path, output: ffmpeg.AudioFormat, tmp_path: Path
) -> None:
    """The duration returned and the progress reported count every decoded second."""
    seen: list[float] = []
    target = tmp_path / f"out{output.extension}"
    duration = await _converter(output).convert(restarting, target, on_progress=seen.append)
    assert duration == pytest.approx(60.0, abs=0.5)
    # The express lane's watch reads the progress: it must see the real length too.
    assert max(seen) == pytest.approx(60.0, abs=1.5)


@pytest.mark.timeout(30)
@pytest.mark.parametrize("output", FORMATS, ids=IDS)
async def test_max_duration_holds_when_timestamps_restart(
    restarting: Path, output: ffmpeg.AudioFormat, tmp_path: Path
) -> None:
    """60 s of audio stamped as 2 s is refused by a 30-second limit, ffmpeg stopped."""
    with pytest.raises(RecordingTooLong) as info:
        await _converter(output, max_seconds=30).convert(
            restarting, tmp_path / f"out{output.extension}"
        )
    assert str(info.value) == "the recording is longer than the limit of 30 seconds"
    assert children() == []


@pytest.mark.parametrize("output", FORMATS, ids=IDS)
async def test_bytes_per_second_holds_when_timestamps_restart(
    restarting: Path, output: ffmpeg.AudioFormat, tmp_path: Path
) -> None:
    """A file too small for the audio it decodes to is refused, though its clock says 2 s."""
    per_decoded_second = restarting.stat().st_size / 60.0
    with pytest.raises(RecordingTooLong) as info:
        await _converter(output, min_bytes_per_second=per_decoded_second * 1.5).convert(
            restarting, tmp_path / f"out{output.extension}"
        )
    assert "bytes" in str(info.value)


@pytest.mark.parametrize("output", FORMATS, ids=IDS)
def test_the_backstop_counts_decoded_samples(
    restarting: Path, output: ffmpeg.AudioFormat, tmp_path: Path
) -> None:
    """ffmpeg's own ``-t`` backstop stops writing at the allowed length of decoded audio."""
    target = tmp_path / f"out{output.extension}"
    arguments = ffmpeg.command(media.FFMPEG, restarting, target, max_seconds=5, output=output)
    subprocess.run(arguments, check=True, capture_output=True, timeout=30)
    measured = subprocess.run(
        ffmpeg.measure_command(media.FFMPEG, target, output),
        check=True,
        capture_output=True,
        timeout=30,
        text=True,
    )
    written = ffmpeg.last_out_time(measured.stdout)
    assert written is not None
    assert written <= 5 + ffmpeg.LIMIT_MARGIN_SECONDS + 0.1


@pytest.mark.timeout(30)
@pytest.mark.parametrize("output", FORMATS, ids=IDS)
async def test_the_express_watch_counts_decoded_samples(
    restarting: Path, output: ffmpeg.AudioFormat, tmp_path: Path
) -> None:
    """A small file stamped as 2 s but decoding to 60 s leaves a 30-second express lane."""
    settings = Settings(
        express_bytes=10 * 1024**2,
        express_duration=timedelta(seconds=30),
        idle_poll_interval=timedelta(hours=1),
    )
    world = make_world(tmp_path, settings=settings)
    world.services = attrs.evolve(world.services, converter=_converter(output))
    job = await world.submit(restarting.read_bytes(), filename="note.mkv")
    lease = await acquire_next(world.services, State.CONVERT, short_only=True)
    assert lease is not None
    back = await process(world.services, lease)
    assert back is not None
    assert (back.id, back.state, back.short, back.converted_file_id) == (
        job.id,
        State.CONVERT,
        False,
        None,
    )
    assert children() == []
