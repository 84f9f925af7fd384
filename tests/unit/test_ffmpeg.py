"""The ffmpeg converter beyond its contract: real media cases, failures, cancellation."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

import pytest

from tests.support import media
from tests.support.processes import children, group_members, open_fifo_writer
from transcriber_adapters import ffmpeg
from transcriber_adapters.ffmpeg import FfmpegConverter, classify_failure
from transcriber_adapters.localdisk import staging_path
from transcriber_core.errors import (
    ConverterUnavailable,
    DiskFull,
    RecordingTooLong,
    TransientError,
    UnreadableMedia,
)
from transcriber_core.policy import DecodeLimits

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


def _niceness(pid: int) -> int:
    """The niceness of process ``pid``, from /proc (the 19th field of its stat line)."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    return int(stat[stat.rindex(")") + 2 :].split()[16])


def _reading(pid: int) -> str:
    """The input a running ffmpeg was given (the argument after ``-i``)."""
    arguments = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    return arguments[arguments.index(b"-i") + 1].decode()


@pytest.mark.timeout(30)
async def test_two_conversions_run_at_once_a_background_one_at_lower_priority(
    converter: FfmpegConverter, tmp_path: Path
) -> None:
    """Two conversions' ffmpegs run at the same time; a long recording's is niced by 10 (ADR 63).

    Each ffmpeg reads a FIFO, which opens for writing only once that ffmpeg
    has opened it for reading: both are open before either has a byte, so
    neither conversion waited for the other to end.
    """
    wav = media.generate(tmp_path / "second.wav", "-f", "lavfi", "-i", "sine=duration=1")
    fifos = {background: tmp_path / f"input-{background}.wav" for background in (False, True)}
    for fifo in fifos.values():
        os.mkfifo(fifo)
    tasks = {
        background: asyncio.create_task(
            converter.convert(fifo, tmp_path / f"out-{background}.ogg", background=background)
        )
        for background, fifo in fifos.items()
    }
    writers = []
    try:
        for key in (False, True):
            # One at a time, so the writers opened so far are closed if the next one fails.
            writers.append(await open_fifo_writer(fifos[key], tasks[key], wait_seconds=10))  # noqa: PERF401
        running = {_reading(pid): pid for pid in children(FFMPEG_COMM)}
        own = os.getpriority(os.PRIO_PROCESS, 0)
        assert {key: _niceness(running[f"file:{fifo}"]) for key, fifo in fifos.items()} == {
            False: own,
            True: min(own + ffmpeg.BACKGROUND_NICENESS, 19),
        }
        for writer in writers:
            writer.write(wav.read_bytes())
    except BaseException:
        for task in tasks.values():
            task.cancel()
        raise
    finally:
        for writer in writers:
            writer.close()
        durations = await asyncio.gather(*tasks.values(), return_exceptions=True)
    assert durations == [pytest.approx(1.0, abs=0.1)] * 2


@pytest.mark.timeout(20)
async def test_cancellation_kills_ffmpeg(
    converter: FfmpegConverter, tmp_path: Path, system_temp: Path
) -> None:
    """Cancelling a conversion kills ffmpeg and reaps it; the staged output is removed."""
    fifo = tmp_path / "endless.wav"
    os.mkfifo(fifo)
    async with staging_path(system_temp, ".ogg") as target:
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
            183,
            "[in#0] Format not on whitelist 'wav,mp3'\nError opening input: Invalid argument",
            False,
            UnreadableMedia,
            ffmpeg.NOT_MEDIA,
        ),
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
            DiskFull,
            None,
        ),
        (1, "x.ogg: Disk quota exceeded", True, DiskFull, None),
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


# Limits, "Converter input" (docs/reference.md): only real containers are decoded.

#: Common real inputs, each made by ffmpeg: (file name, how to make it from a length in seconds).
REAL_INPUTS: list[tuple[str, Callable[[Path, float], Path]]] = [
    ("tone.wav", media.tone),
    ("tone.mp3", media.tone),
    ("voice.ogg", lambda p, s: media.encoded(p, s, "-c:a", "libopus", "-ac", "1", "-ar", "48000")),
    ("vorbis.ogg", lambda p, s: media.encoded(p, s, "-c:a", "libvorbis")),
    ("tone.flac", media.tone),
    ("tone.m4a", lambda p, s: media.encoded(p, s, "-c:a", "aac")),
    ("tone.aac", lambda p, s: media.encoded(p, s, "-c:a", "aac")),
    ("tone.amr", lambda p, s: media.encoded(p, s, "-c:a", "libopencore_amrnb", "-ar", "8000")),
    ("tone.3gp", lambda p, s: media.encoded(p, s, "-c:a", "libopencore_amrnb", "-ar", "8000")),
    ("tone.webm", lambda p, s: media.encoded(p, s, "-c:a", "libopus")),
    ("tone.wma", lambda p, s: media.encoded(p, s, "-c:a", "wmav2")),
    ("clip.mp4", media.video_with_audio),
    (
        "video-note.mp4",
        lambda p, s: media.video(p, s, "-c:v", "libx264", "-preset", "ultrafast", "-c:a", "aac"),
    ),
    ("clip.mov", lambda p, s: media.video(p, s, "-c:v", "mpeg4", "-c:a", "aac")),
    ("clip.mkv", lambda p, s: media.video(p, s, "-c:v", "mpeg4", "-c:a", "libvorbis")),
    ("clip.avi", lambda p, s: media.video(p, s, "-c:v", "mpeg4", "-c:a", "libmp3lame")),
    ("clip.ts", lambda p, s: media.video(p, s, "-c:v", "mpeg2video", "-c:a", "mp2")),
]


@pytest.mark.parametrize(("name", "make"), REAL_INPUTS, ids=[name for name, _ in REAL_INPUTS])
async def test_real_containers_convert(
    converter: FfmpegConverter, tmp_path: Path, name: str, make: Callable[[Path, float], Path]
) -> None:
    """Each common audio and video container still converts and is measured."""
    source = make(tmp_path / name, 1.0)
    target = tmp_path / "out.ogg"
    assert await converter.convert(source, target) == pytest.approx(1.0, abs=0.25)
    assert target.read_bytes().startswith(b"OggS")


def _stored_recording(folder: Path) -> Path:
    """Another sender's recording, stored beside the upload: 3.7 s, a length easy to spot."""
    return media.tone(folder / "k3Yw9-other-sender.wav", 3.7)


def _ffconcat(folder: Path, name: str) -> Path:
    source = folder / "upload.mp3"
    source.write_text(f"ffconcat version 1.0\nfile {name}\n")
    return source


def _hls(folder: Path, name: str) -> Path:
    source = folder / "upload.m3u8"
    source.write_text(f"#EXTM3U\n#EXT-X-TARGETDURATION:4\n#EXTINF:3.7,\n{name}\n#EXT-X-ENDLIST\n")
    return source


#: Ways an upload can name a file stored beside it: relative, absolute, through "..".
NAMINGS: list[Callable[[Path], str]] = [
    lambda stored: stored.name,
    str,
    lambda stored: f"../{stored.parent.name}/{stored.name}",
]


@pytest.mark.parametrize("script", [_ffconcat, _hls], ids=["ffconcat", "hls"])
@pytest.mark.parametrize("naming", NAMINGS, ids=["relative", "absolute", "dotdot"])
async def test_upload_naming_a_stored_file_is_refused(
    converter: FfmpegConverter,
    tmp_path: Path,
    script: Callable[[Path, str], Path],
    naming: Callable[[Path], str],
) -> None:
    """A concat script or playlist naming another recording is "not an audio or video file"."""
    stored = _stored_recording(tmp_path)
    source = script(tmp_path, naming(stored))
    target = tmp_path / "out.ogg"
    with pytest.raises(UnreadableMedia) as info:
        await converter.convert(source, target)
    assert str(info.value) == ffmpeg.NOT_MEDIA
    _assert_names_nothing(info.value, source, stored, target)


def _sdp(folder: Path) -> Path:
    source = folder / "upload.sdp"
    source.write_text(
        "v=0\no=- 0 0 IN IP4 127.0.0.1\ns=x\nc=IN IP4 127.0.0.1\nt=0 0\nm=audio 9 RTP/AVP 0\n"
    )
    return source


def _subtitles(folder: Path) -> Path:
    source = folder / "upload.srt"
    source.write_text("1\n00:00:01,000 --> 00:00:02,000\nhello\n")
    return source


def _image(folder: Path) -> Path:
    return media.generate(
        folder / "upload.png", "-f", "lavfi", "-i", "color=c=red:s=8x8:d=0.1", "-frames:v", "1"
    )


def _ffmetadata(folder: Path) -> Path:
    source = folder / "upload.txt"
    source.write_text(";FFMETADATA1\ntitle=x\n")
    return source


@pytest.mark.parametrize(
    "make", [_sdp, _subtitles, _image, _ffmetadata], ids=["sdp", "srt", "png", "ffmetadata"]
)
async def test_files_that_are_not_containers_are_refused(
    converter: FfmpegConverter, tmp_path: Path, make: Callable[[Path], Path]
) -> None:
    """SDP, subtitles, pictures and metadata files are "not an audio or video file", for good."""
    with pytest.raises(UnreadableMedia) as info:
        await converter.convert(make(tmp_path), tmp_path / "out.ogg")
    assert str(info.value) == ffmpeg.NOT_MEDIA


@pytest.mark.timeout(20)
async def test_ffmpeg_works_in_an_empty_removed_directory(
    converter: FfmpegConverter, tmp_path: Path, system_temp: Path
) -> None:
    """ffmpeg's working directory is empty and already removed: a relative name finds nothing."""
    fifo = tmp_path / "endless.wav"
    os.mkfifo(fifo)
    task = asyncio.create_task(converter.convert(fifo, tmp_path / "out.ogg"))
    writer = await open_fifo_writer(fifo, task)
    try:
        [pid] = children(FFMPEG_COMM)
        cwd = str(Path(f"/proc/{pid}/cwd").readlink())
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    finally:
        writer.close()
    assert cwd.endswith(" (deleted)")
    assert not Path(cwd.removesuffix(" (deleted)")).exists()
    assert list(system_temp.iterdir()) == []


# Limits, "Decoded size" (docs/reference.md): a small file cannot make hours of work.


def _limited(max_seconds: float = 28_800, min_bytes_per_second: float = 100) -> FfmpegConverter:
    return FfmpegConverter(
        limits=DecodeLimits(
            max_duration=timedelta(seconds=max_seconds), min_bytes_per_second=min_bytes_per_second
        )
    )


@pytest.mark.timeout(30)
async def test_one_hertz_wav_is_refused_naming_the_limit(
    converter: FfmpegConverter, tmp_path: Path
) -> None:
    """The 21,644-byte WAV that decodes to 6 h fails for good, naming bytes per second."""
    source = media.one_hertz_wav(tmp_path / "bomb.wav", 6 * 3600)
    target = tmp_path / "out.ogg"
    with pytest.raises(RecordingTooLong) as info:
        await converter.convert(source, target)
    assert "100 bytes" in str(info.value)
    _assert_names_nothing(info.value, source, target)
    # Refused from the declared length, before ffmpeg wrote one limit's worth (216 s) of Opus.
    assert not target.exists() or target.stat().st_size < 216 * 6_000
    assert children() == []


@pytest.mark.timeout(30)
async def test_stream_without_declared_length_stops_at_max_duration(tmp_path: Path) -> None:
    """A file that declares no length is stopped once its output passes the maximum duration."""
    # ffmpeg writing Matroska to a pipe cannot seek back to store the length.
    streamed = await asyncio.to_thread(
        subprocess.run,
        [
            *(media.FFMPEG, "-v", "error", "-f", "lavfi", "-i", "sine=duration=30"),
            *("-c:a", "libvorbis", "-f", "matroska", "-"),
        ],
        capture_output=True,
        check=True,
    )
    source = tmp_path / "streamed.mkv"
    source.write_bytes(streamed.stdout)
    with pytest.raises(RecordingTooLong) as info:
        await _limited(max_seconds=2).convert(source, tmp_path / "out.ogg")
    assert str(info.value) == "the recording is longer than the limit of 2 seconds"
    assert children() == []


async def test_recording_within_tight_limits_converts(tmp_path: Path) -> None:
    """A recording just inside both limits converts: the limits refuse only what passes them."""
    source = media.tone(tmp_path / "tone.mp3", 2.0)
    per_second = source.stat().st_size / 2.0
    converter = _limited(max_seconds=2.5, min_bytes_per_second=per_second * 0.8)
    assert await converter.convert(source, tmp_path / "out.ogg") == pytest.approx(2.0, abs=0.2)


@pytest.mark.timeout(20)
async def test_declared_length_refuses_before_any_output(tmp_path: Path) -> None:
    """A container declaring more audio than its size allows is refused as soon as it is read."""
    script = _fake_ffmpeg(
        tmp_path,
        "echo \"Input #0, wav, from 'file:/data/x.wav':\" >&2\n"
        "echo '  Duration: 06:00:00.00, bitrate: 0 kb/s' >&2\n"
        "exec sleep 60",
    )
    source = tmp_path / "in.wav"
    source.write_bytes(b"\0" * 21_644)
    with pytest.raises(RecordingTooLong) as info:
        await FfmpegConverter(script).convert(source, tmp_path / "out.ogg")
    assert "100 bytes" in str(info.value)
    assert children() == []


@pytest.mark.timeout(20)
async def test_output_past_the_limit_kills_ffmpeg(tmp_path: Path) -> None:
    """Progress past the maximum duration ends the conversion at once, with ffmpeg killed."""
    script = _fake_ffmpeg(
        tmp_path,
        "printf 'out_time_us=1000000\\nprogress=continue\\n'\n"
        "printf 'out_time_us=3000000\\nprogress=continue\\n'\n"
        "exec sleep 60",
    )
    source = tmp_path / "in.wav"
    source.write_bytes(b"\0" * 100_000)
    with pytest.raises(RecordingTooLong) as info:
        await FfmpegConverter(
            script, limits=DecodeLimits(max_duration=timedelta(seconds=2))
        ).convert(source, tmp_path / "out.ogg")
    assert str(info.value) == "the recording is longer than the limit of 2 seconds"
    assert children() == []


async def test_metadata_cannot_forge_a_declared_length(tmp_path: Path) -> None:
    """A tag whose value looks like a Duration line is not taken for the container's length."""
    script = _fake_ffmpeg(
        tmp_path,
        "echo \"Input #0, mp3, from 'file:/data/x.mp3':\" >&2\n"
        "echo '  Metadata:' >&2\n"
        "echo '    title           : x' >&2\n"
        "echo '                    :   Duration: 06:00:00.00' >&2\n"
        "echo '    comment         : Duration: 06:00:00.00' >&2\n"
        "echo '  Duration: 00:00:01.00, start: 0.000000, bitrate: 64 kb/s' >&2\n"
        "printf 'out_time_us=1000000\\nprogress=end\\n'",
    )
    source = tmp_path / "in.mp3"
    source.write_bytes(b"\0" * 8_000)
    assert await FfmpegConverter(script).convert(source, tmp_path / "out.ogg") == 1.0


# Limits, "Crashes" (docs/reference.md): ffmpeg dies with the process that started it.

_CONVERT_IN_CHILD = """
import asyncio, sys
from pathlib import Path
from transcriber_adapters.ffmpeg import FfmpegConverter
asyncio.run(FfmpegConverter().convert(Path(sys.argv[1]), Path(sys.argv[2])))
"""


def _gone(pid: int) -> bool:
    """True once ``pid`` has exited (a zombie waiting for init counts as exited)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return True
    return stat[stat.rindex(")") + 2] == "Z"


@pytest.mark.timeout(30)
def test_ffmpeg_dies_with_its_parent(tmp_path: Path) -> None:
    """SIGKILL of the converting process kills its ffmpeg: no orphan keeps writing."""
    fifo = tmp_path / "endless.wav"
    os.mkfifo(fifo)
    parent = subprocess.Popen(
        [sys.executable, "-c", _CONVERT_IN_CHILD, str(fifo), str(tmp_path / "out.ogg")]
    )
    try:
        # Opening the FIFO for writing waits until ffmpeg opens it for reading.
        with fifo.open("wb"):
            [pid] = children(FFMPEG_COMM, parent=parent.pid)
            parent.kill()
            parent.wait()
            deadline = time.monotonic() + 10
            while not _gone(pid) and time.monotonic() < deadline:
                time.sleep(0.02)
            assert _gone(pid)
    finally:
        parent.kill()
        parent.wait()
