"""The converter on ffmpeg: any recording to mono Ogg/Opus, measured by ffmpeg itself (SPEC §5).

The imageio-ffmpeg wheel ships ffmpeg without ffprobe, so the duration and
the progress come from ffmpeg's ``-progress`` output while it converts: the
last ``out_time_us`` before ``progress=end`` is the length of the audio
written.

ffmpeg's messages name the input and output paths, so none of its text
leaves this module: a failure is classified by a few known phrases and
reported in our own words.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
from pathlib import Path

import imageio_ffmpeg

from transcriber_adapters._threads import wait_out
from transcriber_core.errors import ConverterUnavailable, StepError, UnreadableMedia
from transcriber_core.ports import ProgressCallback

#: Bytes of ffmpeg's stderr kept to classify a failure: its verdict is at the end.
STDERR_TAIL_BYTES = 64 * 1024

#: Phrases (lower case) that mean the input has no audio stream to take.
NO_AUDIO_PHRASES = (
    "matches no streams",
    "does not contain any stream",
)
#: Phrases that mean something around ffmpeg failed, not the recording; worth a retry.
TRANSIENT_PHRASES = (
    "no space left on device",
    "disk quota exceeded",
    "cannot allocate memory",
    "too many open files",
    "resource temporarily unavailable",
    "input/output error",
    "read-only file system",
    "permission denied",
    "no such file or directory",
    "error opening output",
    "received signal",
)
#: Phrases that mean ffmpeg cannot read the input as media.
UNDECODABLE_PHRASES = (
    "invalid data found when processing input",
    "could not find codec parameters",
    "moov atom not found",
    "unknown input format",
    "decoder not found",
    "end of file",
)

NO_AUDIO = "the recording has no audio stream"
UNDECODABLE = "the recording is not a format ffmpeg can decode"
DAMAGED = "the recording is damaged: ffmpeg could not decode it to the end"
EMPTY = "the recording contains no audio"


def find_ffmpeg() -> str:
    """``ffmpeg`` from PATH when there is one, else the binary in the imageio-ffmpeg wheel."""
    on_path = shutil.which("ffmpeg")
    if on_path is not None:
        return on_path
    try:
        return str(imageio_ffmpeg.get_ffmpeg_exe())
    except RuntimeError:
        raise ConverterUnavailable("no ffmpeg binary was found") from None


def command(binary: str, source: Path, target: Path) -> list[str]:
    """The ffmpeg arguments that write ``source``'s first audio stream to ``target``."""
    return [
        binary,
        "-nostdin",
        "-hide_banner",
        "-y",
        # Local files only: a playlist or concat script in an upload reaches no network.
        "-protocol_whitelist",
        "file",
        "-i",
        _file_url(source),
        "-map",
        "0:a:0",
        "-vn",
        "-sn",
        "-dn",
        "-ac",
        "1",
        "-ar",
        "48000",
        "-c:a",
        "libopus",
        "-b:a",
        "48k",
        "-application",
        "voip",
        "-progress",
        "pipe:1",
        "-nostats",
        # The format is named, so the target's own name (a staging file) does not matter.
        "-f",
        "ogg",
        _file_url(target),
    ]


def _file_url(path: Path) -> str:
    # Absolute and with "file:", so no name is read as an option or a protocol.
    return f"file:{path.absolute()}"


def classify_failure(  # noqa: PLR0911 - one return per class of failure, in order
    returncode: int, stderr: str, *, input_opened: bool, source_present: bool = False
) -> StepError:
    """Our own error for an ffmpeg that exited with ``returncode``, judged from its stderr.

    A negative code (killed by a signal) and known I/O trouble are transient.
    No audio stream, an undecodable input, and any other failure after ffmpeg
    opened the input are this recording's fault: ``UnreadableMedia``. So is a
    missing file while the source is still there: the recording itself names
    files (an ffconcat script, a playlist), which no retry will bring.
    """
    text = stderr.lower()
    if returncode < 0:
        return ConverterUnavailable("ffmpeg was stopped by a signal")
    if any(phrase in text for phrase in NO_AUDIO_PHRASES):
        return UnreadableMedia(NO_AUDIO)
    if source_present and "no such file or directory" in text:
        return UnreadableMedia(UNDECODABLE)
    if any(phrase in text for phrase in TRANSIENT_PHRASES):
        return ConverterUnavailable("ffmpeg could not read or write its files")
    if any(phrase in text for phrase in UNDECODABLE_PHRASES):
        return UnreadableMedia(UNDECODABLE)
    if input_opened:
        return UnreadableMedia(DAMAGED)
    return ConverterUnavailable("ffmpeg failed before reading the recording")


class FfmpegConverter:
    """Runs ffmpeg once per recording; output is mono 48 kHz Opus at 48 kbit/s in Ogg.

    ``binary`` defaults to ``find_ffmpeg()``, looked up at the first
    conversion. A recording with no audio, undecodable, or whose audio
    lasts zero seconds (nothing to recognise) raises ``UnreadableMedia``;
    ffmpeg missing, killed, or short of disk raises ``ConverterUnavailable``.
    Cancelling ``convert`` kills ffmpeg and waits for it to exit; the
    partial output stays at ``target`` for the caller's staging to remove.
    """

    def __init__(self, binary: str | Path | None = None) -> None:
        self._binary = str(binary) if binary is not None else None

    @property
    def output_extension(self) -> str:
        """Ogg/Opus."""
        return ".ogg"

    async def convert(
        self, source: Path, target: Path, *, on_progress: ProgressCallback | None = None
    ) -> float:
        """Write ``source``'s first audio stream to ``target``; return its duration in seconds."""
        if self._binary is None:
            self._binary = await asyncio.to_thread(find_ffmpeg)
        try:
            process = await asyncio.create_subprocess_exec(
                *command(self._binary, source, target),
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                # Its own session: a Ctrl-C at the terminal is ours to handle and
                # must not make ffmpeg fail a recording that is fine; and the
                # group can be killed as one.
                start_new_session=True,
            )
        except OSError:
            raise ConverterUnavailable("ffmpeg could not be started") from None
        try:
            returncode, duration, tail = await _follow(process, on_progress)
        except BaseException:
            await _kill(process)
            raise
        if returncode != 0:
            raise classify_failure(
                returncode,
                tail.text(),
                input_opened=tail.input_opened,
                source_present=await asyncio.to_thread(source.exists),
            )
        if duration is None or duration <= 0:
            raise UnreadableMedia(EMPTY)
        return duration


class _StderrTail:
    """The last ``STDERR_TAIL_BYTES`` of stderr, and whether ffmpeg opened its input."""

    _MARK = b"Input #0"

    def __init__(self) -> None:
        self._buffer = bytearray()
        self.input_opened = False

    def feed(self, chunk: bytes) -> None:
        """Add ``chunk``, dropping what falls out of the tail."""
        start = max(0, len(self._buffer) - len(self._MARK))
        self._buffer += chunk
        if not self.input_opened and self._MARK in self._buffer[start:]:
            self.input_opened = True
        del self._buffer[:-STDERR_TAIL_BYTES]

    def text(self) -> str:
        """The tail as text, for matching phrases only; never shown or logged."""
        return self._buffer.decode("utf-8", errors="replace")


async def _follow(
    process: asyncio.subprocess.Process, on_progress: ProgressCallback | None
) -> tuple[int, float | None, _StderrTail]:
    """Read both pipes to the end while ffmpeg runs, so neither can fill up and block it."""
    stdout, stderr = process.stdout, process.stderr
    if stdout is None or stderr is None:  # pragma: no cover - both are PIPE above
        raise ConverterUnavailable("ffmpeg's output could not be read")
    tail = _StderrTail()
    try:
        async with asyncio.TaskGroup() as group:
            progress = group.create_task(_read_progress(stdout, on_progress))
            group.create_task(_read_stderr(stderr, tail))
            exit_code = group.create_task(process.wait())
    except BaseExceptionGroup as group_error:
        # One failing reader (the caller's callback raising) is the error to report.
        raise group_error.exceptions[0] from None
    return exit_code.result(), progress.result(), tail


async def _read_stderr(stream: asyncio.StreamReader, tail: _StderrTail) -> None:
    while chunk := await stream.read(STDERR_TAIL_BYTES):
        tail.feed(chunk)


async def _read_progress(
    stream: asyncio.StreamReader, on_progress: ProgressCallback | None
) -> float | None:
    """Report ``out_time`` at each progress block; return the last one (the duration)."""
    latest: float | None = None
    reported = 0.0
    async for raw in stream:
        key, _, value = raw.decode("ascii", errors="replace").strip().partition("=")
        if key in ("out_time_us", "out_time_ms"):
            # Both are microseconds ("out_time_ms" is misnamed in ffmpeg).
            seconds = _microseconds(value)
            if seconds is not None:
                latest = seconds
        elif key == "progress" and latest is not None and on_progress is not None:
            reported = max(reported, latest)
            on_progress(reported)
    return latest


def _microseconds(value: str) -> float | None:
    try:
        return max(0, int(value)) / 1_000_000
    except ValueError:
        return None  # "N/A" before the first frame


async def _kill(process: asyncio.subprocess.Process) -> None:
    """Kill ffmpeg's process group and wait until it is gone, even if cancelled again meanwhile.

    The whole group, because ``wait`` returns only once every holder of the
    pipes has exited; a pid of a reaped leader is not reused while its
    group lives, so this is safe after ffmpeg itself has exited.
    """
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    await wait_out(asyncio.ensure_future(process.wait()))
