"""The ffmpeg converter beyond its contract: real media cases, failures, cancellation."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import tempfile
from pathlib import Path

import pytest

from tests.support import media
from tests.support.processes import children, group_members, open_fifo_writer
from transcriber_adapters import ffmpeg
from transcriber_adapters._temp import staging_path
from transcriber_adapters.ffmpeg import FfmpegConverter, classify_failure
from transcriber_core.errors import ConverterUnavailable, TransientError, UnreadableMedia

#: ffmpeg's command name as /proc shows it (the wheel's binary is "ffmpeg-linux-...").
FFMPEG_COMM = "ffmpeg"


@pytest.fixture
def converter() -> FfmpegConverter:
    return FfmpegConverter()


@pytest.fixture
def system_temp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Point the system temp dir at an empty folder for the test."""
    folder = tmp_path / "system-temp"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    return folder


def _fake_ffmpeg(tmp_path: Path, body: str) -> Path:
    """A stand-in ffmpeg: a shell script with ``body``, ignoring its arguments."""
    script = tmp_path / "fake-ffmpeg"
    script.write_text(f"#!/bin/sh\n{body}\n")
    script.chmod(0o755)
    return script


def _assert_names_nothing(error: BaseException, *paths: Path) -> None:
    text = str(error)
    for path in paths:
        assert str(path) not in text
        assert path.name not in text


async def test_video_with_audio_converts(converter: FfmpegConverter, tmp_path: Path) -> None:
    """A video's audio track is taken and measured; the picture is dropped."""
    source = media.video_with_audio(tmp_path / "clip.mp4", 2.0)
    target = tmp_path / "out.ogg"
    duration = await converter.convert(source, target)
    assert duration == pytest.approx(2.0, abs=0.2)
    assert target.read_bytes().startswith(b"OggS")


async def test_wav_converts(converter: FfmpegConverter, tmp_path: Path) -> None:
    """Uncompressed PCM converts and is measured exactly enough."""
    source = media.tone(tmp_path / "tone.wav", 1.5)
    assert await converter.convert(source, tmp_path / "out.ogg") == pytest.approx(1.5, abs=0.2)


async def test_output_is_mono_opus_48k(converter: FfmpegConverter, tmp_path: Path) -> None:
    """The output is one channel of Opus at 48 kHz in Ogg, what the recognizer takes."""
    source = media.video_with_audio(tmp_path / "clip.mp4", 1.0)
    target = tmp_path / "out.ogg"
    await converter.convert(source, target)
    probe = await asyncio.to_thread(
        subprocess.run,
        [media.FFMPEG, "-hide_banner", "-i", str(target)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert "Audio: opus, 48000 Hz, mono" in probe.stderr


async def test_target_name_does_not_choose_format(
    converter: FfmpegConverter, tmp_path: Path
) -> None:
    """The output is Ogg even when the target path has no .ogg extension."""
    target = tmp_path / "staging-without-extension"
    await converter.convert(media.tone(tmp_path / "tone.mp3", 1.0), target)
    assert target.read_bytes().startswith(b"OggS")


async def test_video_only_has_no_audio(converter: FfmpegConverter, tmp_path: Path) -> None:
    """A video with no audio stream fails for good as "no audio stream", naming no path."""
    source = media.video_only(tmp_path / "silent-film.mp4", 1.0)
    target = tmp_path / "out.ogg"
    with pytest.raises(UnreadableMedia) as info:
        await converter.convert(source, target)
    assert str(info.value) == ffmpeg.NO_AUDIO
    _assert_names_nothing(info.value, source, target)


async def test_zero_samples_is_unreadable(converter: FfmpegConverter, tmp_path: Path) -> None:
    """A valid file with no audio samples has nothing to recognise: UnreadableMedia."""
    source = media.empty_audio(tmp_path / "empty.wav")
    with pytest.raises(UnreadableMedia) as info:
        await converter.convert(source, tmp_path / "out.ogg")
    assert str(info.value) == ffmpeg.EMPTY


async def test_truncated_mp4_is_undecodable(converter: FfmpegConverter, tmp_path: Path) -> None:
    """An MP4 cut off before its index (an aborted upload) is "not a format ffmpeg can decode"."""
    whole = media.video_with_audio(tmp_path / "whole.mp4", 2.0).read_bytes()
    source = tmp_path / "cut.mp4"
    source.write_bytes(whole[: len(whole) // 2])
    with pytest.raises(UnreadableMedia) as info:
        await converter.convert(source, tmp_path / "out.ogg")
    assert str(info.value) == ffmpeg.UNDECODABLE
    _assert_names_nothing(info.value, source)


async def test_concat_script_naming_missing_files_fails_for_good(
    converter: FfmpegConverter, tmp_path: Path
) -> None:
    """An upload that is an ffconcat script naming absent files is unreadable, not retried."""
    source = tmp_path / "upload.mp3"
    source.write_text("ffconcat version 1.0\nfile missing-part.mp3\n")
    with pytest.raises(UnreadableMedia) as info:
        await converter.convert(source, tmp_path / "out.ogg")
    _assert_names_nothing(info.value, source)


async def test_playlist_cannot_reach_the_network(
    converter: FfmpegConverter, tmp_path: Path
) -> None:
    """An HLS playlist in an upload pointing at a URL fails without a network request."""
    source = tmp_path / "upload.m3u8"
    source.write_text("#EXTM3U\n#EXTINF:1,\nhttp://127.0.0.1:9/segment.ts\n#EXT-X-ENDLIST\n")
    with pytest.raises(UnreadableMedia):
        await converter.convert(source, tmp_path / "out.ogg")


async def test_missing_binary_is_transient(tmp_path: Path) -> None:
    """An ffmpeg that cannot be started is a temporary failure, not a verdict on the file."""
    converter = FfmpegConverter(tmp_path / "no-such-ffmpeg")
    source = media.tone(tmp_path / "tone.mp3", 1.0)
    with pytest.raises(ConverterUnavailable):
        await converter.convert(source, tmp_path / "out.ogg")


def test_binary_from_path_preferred(monkeypatch: pytest.MonkeyPatch) -> None:
    """An ffmpeg on PATH wins over the one in the wheel."""
    monkeypatch.setattr(ffmpeg.shutil, "which", lambda name: f"/opt/bin/{name}")
    assert ffmpeg.find_ffmpeg() == "/opt/bin/ffmpeg"


def test_binary_from_wheel_without_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """With no ffmpeg on PATH, the imageio-ffmpeg binary is used."""
    monkeypatch.setattr(ffmpeg.shutil, "which", lambda name: None)
    monkeypatch.setattr(ffmpeg.imageio_ffmpeg, "get_ffmpeg_exe", lambda: "/wheel/ffmpeg")
    assert ffmpeg.find_ffmpeg() == "/wheel/ffmpeg"


def test_no_binary_anywhere_is_transient(monkeypatch: pytest.MonkeyPatch) -> None:
    """No ffmpeg at all raises ConverterUnavailable, a TransientError."""

    def missing() -> str:
        raise RuntimeError("No ffmpeg exe could be found")

    monkeypatch.setattr(ffmpeg.shutil, "which", lambda name: None)
    monkeypatch.setattr(ffmpeg.imageio_ffmpeg, "get_ffmpeg_exe", missing)
    with pytest.raises(ConverterUnavailable):
        ffmpeg.find_ffmpeg()


@pytest.mark.timeout(20)
async def test_cancellation_kills_ffmpeg(
    converter: FfmpegConverter, tmp_path: Path, system_temp: Path
) -> None:
    """Cancelling a conversion kills ffmpeg and reaps it; the staged output is removed."""
    fifo = tmp_path / "endless.wav"
    os.mkfifo(fifo)
    async with staging_path(".ogg") as target:
        task = asyncio.create_task(converter.convert(fifo, target))
        writer = await open_fifo_writer(fifo, task)
        try:
            [pid] = children(FFMPEG_COMM)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
        finally:
            writer.close()
        assert not Path(f"/proc/{pid}").exists()  # killed and reaped, not a zombie
        assert children(FFMPEG_COMM) == []
    assert list(system_temp.iterdir()) == []


@pytest.mark.timeout(20)
async def test_cancellation_kills_the_process_group(tmp_path: Path) -> None:
    """Cancelling kills every process in ffmpeg's group, so none holds its pipes open."""
    script = _fake_ffmpeg(
        tmp_path, "sleep 60 &\nprintf 'out_time_us=1\\nprogress=continue\\n'\nwait"
    )
    started = asyncio.Event()
    task = asyncio.create_task(
        FfmpegConverter(script).convert(
            tmp_path / "in.mp3", tmp_path / "out.ogg", on_progress=lambda _: started.set()
        )
    )
    await started.wait()
    [pid] = children(script.name)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert group_members(pid) == []


@pytest.mark.timeout(20)
async def test_killed_ffmpeg_is_transient(converter: FfmpegConverter, tmp_path: Path) -> None:
    """An ffmpeg killed from outside (OOM killer) is retried, not a verdict on the recording."""
    fifo = tmp_path / "endless.wav"
    os.mkfifo(fifo)
    task = asyncio.create_task(converter.convert(fifo, tmp_path / "out.ogg"))
    writer = await open_fifo_writer(fifo, task)
    try:
        [pid] = children(FFMPEG_COMM)
        os.kill(pid, signal.SIGKILL)
        with pytest.raises(TransientError):
            await task
    finally:
        writer.close()


@pytest.mark.timeout(20)
async def test_chatty_ffmpeg_does_not_block(tmp_path: Path) -> None:
    """Megabytes on stderr before any progress cannot fill a pipe and hang the conversion."""
    script = _fake_ffmpeg(
        tmp_path,
        "head -c 4000000 /dev/zero | tr '\\0' 'e' >&2\n"
        "printf 'out_time_us=N/A\\nprogress=continue\\n'\n"
        "printf 'out_time_us=500000\\nprogress=continue\\n'\n"
        "printf 'out_time_ms=1000000\\nprogress=continue\\n'\n"
        "printf 'out_time_us=1500000\\nout_time=00:00:01.500000\\nprogress=end\\n'",
    )
    seen: list[float] = []
    duration = await FfmpegConverter(script).convert(
        tmp_path / "in.mp3", tmp_path / "out.ogg", on_progress=seen.append
    )
    assert seen == [0.5, 1.0, 1.5]
    assert duration == 1.5


async def test_failure_after_opening_input_is_unreadable(tmp_path: Path) -> None:
    """A failure after ffmpeg opened the input is the recording's, even past a long log."""
    script = _fake_ffmpeg(
        tmp_path,
        "echo \"Input #0, mp3, from 'file:/data/x.mp3':\" >&2\n"
        "head -c 300000 /dev/zero | tr '\\0' 'w' >&2\n"
        "exit 1",
    )
    with pytest.raises(UnreadableMedia) as info:
        await FfmpegConverter(script).convert(tmp_path / "in.mp3", tmp_path / "out.ogg")
    assert str(info.value) == ffmpeg.DAMAGED


@pytest.mark.timeout(20)
async def test_failing_progress_callback_stops_ffmpeg(tmp_path: Path) -> None:
    """A progress callback that raises ends the conversion with its error and no live ffmpeg."""
    script = _fake_ffmpeg(tmp_path, "printf 'out_time_us=1\\nprogress=continue\\n'\nexec sleep 60")

    def explode(seconds: float) -> None:
        raise LookupError(seconds)

    with pytest.raises(LookupError):
        await FfmpegConverter(script).convert(
            tmp_path / "in.mp3", tmp_path / "out.ogg", on_progress=explode
        )
    assert children() == []


@pytest.mark.parametrize(
    ("returncode", "stderr", "opened", "expected", "message"),
    [
        (
            234,
            "Stream map '0:a:0' matches no streams.",
            True,
            UnreadableMedia,
            ffmpeg.NO_AUDIO,
        ),
        (
            234,
            "Output file #0 does not contain any stream",
            True,
            UnreadableMedia,
            ffmpeg.NO_AUDIO,
        ),
        (
            183,
            "[in#0] Error opening input: Invalid data found when processing input",
            False,
            UnreadableMedia,
            ffmpeg.UNDECODABLE,
        ),
        (1, "[mov] moov atom not found", False, UnreadableMedia, ffmpeg.UNDECODABLE),
        (
            1,
            "Could not find codec parameters for stream 0",
            True,
            UnreadableMedia,
            ffmpeg.UNDECODABLE,
        ),
        (1, "Error while decoding stream #0:0", True, UnreadableMedia, ffmpeg.DAMAGED),
        (
            1,
            "av_interleaved_write_frame(): No space left on device",
            True,
            ConverterUnavailable,
            None,
        ),
        (254, "Error opening input: No such file or directory", False, ConverterUnavailable, None),
        (1, "Error opening output file /srv/x.ogg.", True, ConverterUnavailable, None),
        (255, "Exiting normally, received signal 2.", True, ConverterUnavailable, None),
        (1, "Unrecognized option 'application'.", False, ConverterUnavailable, None),
        (-9, "", True, ConverterUnavailable, None),
    ],
)
def test_failures_are_classified(
    returncode: int,
    stderr: str,
    opened: bool,
    expected: type[Exception],
    message: str | None,
) -> None:
    """Each kind of ffmpeg failure maps to a verdict (permanent) or a retry (transient)."""
    error = classify_failure(returncode, stderr, input_opened=opened)
    assert type(error) is expected
    if message is not None:
        assert str(error) == message
    assert "/srv" not in str(error)
