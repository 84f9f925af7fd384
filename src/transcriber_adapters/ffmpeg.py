"""The converter on ffmpeg: any recording to mono audio, measured in samples (reference: Files).

Two outputs: Ogg/Opus (``OPUS``, what SpeechKit reads and a browser plays),
and for a local recognizer 16 kHz mono 16-bit WAV (``PCM``): what Whisper
hears, with no second lossy generation (ADR 42).

Every length is counted in decoded samples, never taken from the
container's timestamps: ``asetpts=N/SR/TB`` restamps the audio from its
sample count before anything reads a time from it, so a file whose
timestamps restart (a Matroska file whose clusters repeat) cannot decode to
hours while ffmpeg reports seconds. The limits' watch, the ``-t`` backstop
and the express lane's watch all read those times; a WAV output's length is
also checked from the samples it holds.

The imageio-ffmpeg wheel ships ffmpeg without ffprobe, so the duration and
the progress come from ffmpeg's ``-progress`` output while it converts: the
last ``out_time_us`` before ``progress=end`` is the length of the audio
written.

ffmpeg's messages name the input and output paths, so none of its text
leaves this module: a failure is classified by a few known phrases and
reported in our own words.

An upload is hostile input to ffmpeg (reference: Limits, ADR 19): only the
demuxers of real audio and video containers may open it, none of which
opens a further file; ffmpeg works in an empty directory that is already
removed; it is killed once its output passes the ``DecodeLimits``, or as
soon as the container declares more audio than they allow; and it dies
with the process that started it (``setpriv --pdeathsig``).

A long recording's ffmpeg runs at a lower CPU priority (``nice``, ADR 63):
one ffmpeg already keeps more than one CPU busy (its demuxer, decoder,
filter, encoder and muxer are threads of their own), so on a small host two
long conversions would otherwise take the CPU a voice note's needs.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import re
import shutil
import signal
import stat
import subprocess
import tempfile
import weakref
from datetime import timedelta
from pathlib import Path
from typing import BinaryIO

import attrs
import imageio_ffmpeg

from transcriber_core.errors import ConverterUnavailable, DiskFull, StepError, UnreadableMedia
from transcriber_core.policy import DEFAULT_DECODE_LIMITS, DecodeLimits
from transcriber_core.ports import ProgressCallback, Silence
from transcriber_core.tasks import wait_out
from transcriber_core.usage import Measured

log = logging.getLogger("transcriber.ffmpeg")

#: Bytes of ffmpeg's stderr kept to classify a failure: its verdict is at the end.
STDERR_TAIL_BYTES = 64 * 1024

#: The demuxers ffmpeg may use: real audio and video containers, none of which opens
#: another file. Left out on purpose: concat, hls, dash, image2 and every image or
#: subtitle format, sdp/rtp/rtsp, ffmetadata, lavfi, tee, imf, dvdvideo, avisynth,
#: webm_dash_manifest, raw PCM without a header. ``mov`` covers mp4, m4a, 3gp and
#: mov (its external references stay off: ``enable_drefs`` defaults to 0);
#: ``matroska`` covers webm.
ALLOWED_DEMUXERS = (
    "wav",
    "w64",
    "mp3",
    "ogg",
    "flac",
    "mov",
    "matroska",
    "aac",
    "loas",
    "amr",
    "amrnb",
    "amrwb",
    "avi",
    "asf",
    "aiff",
    "caf",
    "au",
    "mpegts",
    "mpeg",
    "flv",
    "ac3",
    "eac3",
    "dts",
    "wv",
    "ape",
    "tta",
    "mpc",
    "mpc8",
    "qcp",
    "xwma",
    "voc",
    "rm",
    "dv",
)

#: The exit codes of setpriv or nice when it could not start ffmpeg (not found, not executable).
SETPRIV_EXEC_FAILED = frozenset({126, 127})
#: The niceness of a background (long recording's) ffmpeg. Against a voice note's
#: ffmpeg and the service itself at 0, it gets about a tenth of a CPU they both want
#: (CFS weights 110 against 1024), and all of a CPU nobody else wants (ADR 63).
BACKGROUND_NICENESS = 10
#: Extra seconds ffmpeg may write past the allowed length, so that an output
#: cut by ``-t`` is still seen to pass the limit.
LIMIT_MARGIN_SECONDS = 1.0

#: Phrases (lower case) that mean ffmpeg refused the input's format or a file it names.
NOT_MEDIA_PHRASES = ("not on whitelist",)
#: Phrases (lower case) that mean the input has no audio stream to take.
NO_AUDIO_PHRASES = (
    "matches no streams",
    "does not contain any stream",
)
#: Phrases that mean the disk is full: the service's condition, the job waits (ADR 20).
NO_SPACE_PHRASES = (
    "no space left on device",
    "disk quota exceeded",
)
#: Phrases that mean something around ffmpeg failed, not the recording; worth a retry.
TRANSIENT_PHRASES = (
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
NOT_MEDIA = "the recording is not an audio or video file"
OWN_AUDIO_UNREADABLE = "ffmpeg could not read the converted audio"
PART_UNWRITABLE = "ffmpeg could not write a part of the converted audio"

#: Uploads counted at once by one process (``measure``, ADR 67); more wait for a turn within
#: their own ceiling, so a flood of uploads is charged its worst case, not a CPU each.
MEASURES_AT_ONCE = max(2, os.cpu_count() or 1)

#: Loudness under which audio counts as silence, in dBFS, for splitting (ADR 26).
SILENCE_NOISE_DB = -35.0
#: Shortest quiet stretch that counts as a silence, in seconds.
MIN_SILENCE_SECONDS = 0.5
#: Restamps the decoded audio from its sample count: times are what was decoded (ADR 42).
SAMPLE_CLOCK = "asetpts=N/SR/TB"


@attrs.frozen
class AudioFormat:
    """What the converter writes: the muxer (the one ``cut`` and ``find_silences`` open)."""

    extension: str
    muxer: str
    #: ffmpeg's output arguments between the mapping and ``-progress``.
    encoding: tuple[str, ...]


#: Mono 48 kHz Opus at 48 kbit/s in Ogg: SpeechKit's input, small to keep and play.
OPUS = AudioFormat(
    extension=".ogg",
    muxer="ogg",
    encoding=("-ar", "48000", "-c:a", "libopus", "-b:a", "48k", "-application", "voip"),
)
#: 16 kHz mono 16-bit PCM in WAV: exactly what Whisper hears, lossless (ADR 42).
PCM = AudioFormat(
    extension=".wav",
    muxer="wav",
    encoding=("-ar", "16000", "-c:a", "pcm_s16le", "-fflags", "+bitexact"),
)
#: The formats by their name in the composition root.
FORMATS = {"opus": OPUS, "pcm": PCM}

_SILENCE_START = re.compile(r"silence_start: (-?\d+(?:\.\d+)?)")
_SILENCE_END = re.compile(r"silence_end: (-?\d+(?:\.\d+)?)")


def find_ffmpeg() -> str:
    """``ffmpeg`` from PATH when there is one, else the binary in the imageio-ffmpeg wheel."""
    on_path = shutil.which("ffmpeg")
    if on_path is not None:
        return on_path
    try:
        return str(imageio_ffmpeg.get_ffmpeg_exe())
    except RuntimeError:
        raise ConverterUnavailable("no ffmpeg binary was found") from None


def find_death_signal() -> list[str]:
    """The command prefix that makes a child die with us: ``setpriv --pdeathsig KILL``.

    Empty (with a warning in the log) where setpriv is missing or too old
    to know ``--pdeathsig`` (util-linux before 2.33): ffmpeg then still
    runs, but may outlive a killed service (ADR 19).
    """
    setpriv = shutil.which("setpriv")
    prefix = [setpriv, "--pdeathsig", "KILL", "--"] if setpriv else []
    if prefix:
        try:
            probe = subprocess.run([*prefix, "true"], capture_output=True, timeout=10, check=False)
        except (OSError, subprocess.SubprocessError):
            prefix = []
        else:
            prefix = prefix if probe.returncode == 0 else []
    if not prefix:
        log.warning("ffmpeg.no_death_signal")
    return prefix


def find_background_priority() -> list[str]:
    """The command prefix that runs a child at a lower CPU priority: ``nice -n 10``.

    Empty (with a warning in the log) where ``nice`` is missing: long
    conversions then compete with a voice note's on equal terms (ADR 63).
    Lowering one's own priority needs no privilege.
    """
    nice = shutil.which("nice")
    if nice is None:
        log.warning("ffmpeg.no_background_priority")
        return []
    return [nice, "-n", str(BACKGROUND_NICENESS), "--"]


def command(
    binary: str,
    source: Path,
    target: Path,
    *,
    max_seconds: float | None = None,
    output: AudioFormat = OPUS,
) -> list[str]:
    """The ffmpeg arguments that write ``source``'s first audio stream to ``target``.

    ``max_seconds``: ffmpeg stops writing a little past it (a backstop to
    the converter's watch on the progress), counted in decoded samples.
    """
    limit = [] if max_seconds is None else ["-t", f"{max_seconds + LIMIT_MARGIN_SECONDS:.3f}"]
    return [
        *_guarded_input(binary, source),
        "-y",
        "-map_metadata",
        "-1",
        # Times from the samples decoded, not from the container (ADR 42).
        "-af",
        SAMPLE_CLOCK,
        "-ac",
        "1",
        *output.encoding,
        "-progress",
        "pipe:1",
        "-nostats",
        *limit,
        # The format is named, so the target's own name (a staging file) does not matter.
        "-f",
        output.muxer,
        _file_url(target),
    ]


def count_command(binary: str, source: Path, *, up_to: float) -> list[str]:
    """The ffmpeg arguments that decode ``source``'s first audio stream to nothing, counting it.

    The same guards and sample clock as ``command`` (the length is what the
    converter would measure), no resampling or encoding, and at most
    ``up_to`` seconds decoded (ADR 67).
    """
    return [
        *_guarded_input(binary, source),
        "-af",
        SAMPLE_CLOCK,
        "-progress",
        "pipe:1",
        "-nostats",
        "-t",
        f"{up_to:.3f}",
        "-f",
        "null",
        "-",
    ]


def _guarded_input(binary: str, source: Path) -> list[str]:
    """ffmpeg's arguments up to an upload's first audio stream, as hostile input is opened."""
    return [
        binary,
        "-nostdin",
        "-hide_banner",
        # Local files only: a playlist or concat script in an upload reaches no network.
        "-protocol_whitelist",
        "file",
        # Real containers only: none of them opens a further file (reference: Limits).
        "-format_whitelist",
        ",".join(ALLOWED_DEMUXERS),
        "-i",
        _file_url(source),
        "-map",
        "0:a:0",
        "-vn",
        "-sn",
        "-dn",
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
    format or protocol ffmpeg was told to refuse (a concat script, a
    playlist), and a missing file while the source is still there.
    """
    text = stderr.lower()
    if returncode < 0:
        return ConverterUnavailable("ffmpeg was stopped by a signal")
    if any(phrase in text for phrase in NOT_MEDIA_PHRASES):
        return UnreadableMedia(NOT_MEDIA)
    if any(phrase in text for phrase in NO_AUDIO_PHRASES):
        return UnreadableMedia(NO_AUDIO)
    if source_present and "no such file or directory" in text:
        return UnreadableMedia(UNDECODABLE)
    if any(phrase in text for phrase in NO_SPACE_PHRASES):
        return DiskFull("ffmpeg found no space left to write the converted audio")
    if any(phrase in text for phrase in TRANSIENT_PHRASES):
        return ConverterUnavailable("ffmpeg could not read or write its files")
    if any(phrase in text for phrase in UNDECODABLE_PHRASES):
        return UnreadableMedia(UNDECODABLE)
    if input_opened:
        return UnreadableMedia(DAMAGED)
    return ConverterUnavailable("ffmpeg failed before reading the recording")


def _own_audio(binary: str, output: AudioFormat) -> list[str]:
    """ffmpeg's first arguments for reading our own output: local files, that format only."""
    return [
        binary,
        "-nostdin",
        "-hide_banner",
        "-nostats",
        "-protocol_whitelist",
        "file",
        "-format_whitelist",
        output.muxer,
    ]


def silence_command(
    binary: str,
    audio: Path,
    *,
    start: float,
    end: float,
    noise_db: float,
    min_seconds: float,
    output: AudioFormat = OPUS,
) -> list[str]:
    """The ffmpeg arguments that report the silences of ``[start, end]`` of our own audio.

    The input is sought (``-ss`` before ``-i``), so only the range is
    decoded; times in the report count from ``start``.
    """
    return [
        *_own_audio(binary, output),
        "-ss",
        f"{start:.3f}",
        "-t",
        f"{end - start:.3f}",
        "-i",
        _file_url(audio),
        "-map",
        "0:a:0",
        "-af",
        f"silencedetect=noise={noise_db:g}dB:d={min_seconds:g}",
        "-f",
        "null",
        "-",
    ]


def cut_command(
    binary: str,
    audio: Path,
    target: Path,
    *,
    start: float,
    end: float,
    output: AudioFormat = OPUS,
) -> list[str]:
    """The ffmpeg arguments that copy ``[start, end)`` of our own audio to ``target``.

    Stream copy, no re-encoding: an hour is cut in seconds, exactly to the
    codec's 20 ms packets (``-ss`` after ``-i`` drops packets before it).
    """
    return [
        *_own_audio(binary, output),
        "-y",
        "-i",
        _file_url(audio),
        "-ss",
        f"{start:.3f}",
        "-to",
        f"{end:.3f}",
        "-map",
        "0:a:0",
        "-c",
        "copy",
        "-f",
        output.muxer,
        _file_url(target),
    ]


def measure_command(binary: str, audio: Path, output: AudioFormat = OPUS) -> list[str]:
    """The ffmpeg arguments that read our own audio to its end without decoding it.

    ``-progress`` then reports the length actually written: stream copy's
    own progress counts from the input's timestamps, not the output's.
    """
    return [
        *_own_audio(binary, output),
        "-i",
        _file_url(audio),
        "-map",
        "0:a:0",
        "-c",
        "copy",
        "-progress",
        "pipe:1",
        "-f",
        "null",
        "-",
    ]


def parse_silences(report: str, *, start: float, end: float) -> tuple[Silence, ...]:
    """The silences in silencedetect's ``report`` (times from ``start``), clipped to the range.

    A silence still open when the range ends lasts to its end.
    """
    found: list[Silence] = []
    opened: float | None = None
    for line in report.splitlines():
        if (match := _SILENCE_START.search(line)) is not None:
            opened = start + max(0.0, float(match.group(1)))
        elif (match := _SILENCE_END.search(line)) is not None:
            begin = start if opened is None else opened
            found.append(Silence(start=begin, end=min(end, start + float(match.group(1)))))
            opened = None
    if opened is not None and opened < end:
        found.append(Silence(start=opened, end=end))
    return tuple(silence for silence in found if silence.end > silence.start)


def last_out_time(progress: str) -> float | None:
    """The last ``out_time_us`` of ffmpeg's ``-progress`` output, in seconds."""
    latest = None
    for line in progress.splitlines():
        key, _, value = line.strip().partition("=")
        if key in ("out_time_us", "out_time_ms"):
            seconds = _microseconds(value)
            if seconds is not None:
                latest = seconds
    return latest


class FfmpegConverter:
    """Runs ffmpeg once per recording; output is ``OPUS`` (the default) or ``PCM``.

    ``binary`` defaults to ``find_ffmpeg()``, looked up at the first
    conversion. A recording with no audio, undecodable, not a real
    container, or whose audio lasts zero seconds raises ``UnreadableMedia``;
    one that decodes to more than ``limits`` allow raises
    ``RecordingTooLong``; ffmpeg missing, killed, or short of disk raises
    ``ConverterUnavailable``. Cancelling ``convert`` kills ffmpeg and waits
    for it to exit; the partial output stays at ``target`` for the caller's
    staging to remove. A ``background`` conversion runs at niceness
    ``BACKGROUND_NICENESS`` (ADR 63).
    """

    def __init__(
        self,
        binary: str | Path | None = None,
        *,
        limits: DecodeLimits = DEFAULT_DECODE_LIMITS,
        silence_noise_db: float = SILENCE_NOISE_DB,
        min_silence_seconds: float = MIN_SILENCE_SECONDS,
        output: AudioFormat = OPUS,
        measures_at_once: int = MEASURES_AT_ONCE,
    ) -> None:
        self._binary = str(binary) if binary is not None else None
        self._output = output
        self._limits = limits
        self._measures_at_once = measures_at_once
        #: One turnstile of ``measure`` per event loop (tests run several loops in threads).
        self._turns: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Semaphore] = (
            weakref.WeakKeyDictionary()
        )
        self._death_signal: list[str] | None = None
        self._background: list[str] | None = None
        self._noise_db = silence_noise_db
        self._min_silence = min_silence_seconds

    @property
    def output_extension(self) -> str:
        """``.ogg`` for Opus, ``.wav`` for PCM."""
        return self._output.extension

    async def convert(
        self,
        source: Path,
        target: Path,
        *,
        on_progress: ProgressCallback | None = None,
        background: bool = False,
    ) -> float:
        """Write ``source``'s first audio stream to ``target``; return its duration in seconds."""
        binary = await self._ready()
        if background and self._background is None:
            self._background = await asyncio.to_thread(find_background_priority)
        prefix = [*((self._background or []) if background else []), *(self._death_signal or [])]
        size = await asyncio.to_thread(_regular_size, source)
        watch = _Limits(self._limits, size)
        arguments = command(binary, source, target, max_seconds=watch.allowed, output=self._output)
        process = await _start([*prefix, *arguments])
        try:
            returncode, duration, tail = await _follow(process, watch, on_progress)
        except BaseException:
            await _kill(process)
            raise
        if returncode in SETPRIV_EXEC_FAILED and prefix and not tail.input_opened:
            raise ConverterUnavailable("ffmpeg could not be started")
        if returncode != 0:
            raise classify_failure(
                returncode,
                tail.text(),
                input_opened=tail.input_opened,
                source_present=await asyncio.to_thread(source.exists),
            )
        if self._output is PCM:
            # The samples written, whatever any timestamp said (ADR 42).
            duration = await asyncio.to_thread(wav_seconds, target)
        if duration is None or duration <= 0:
            raise UnreadableMedia(EMPTY)
        watch.check(duration)
        return duration

    async def measure(self, path: Path, *, up_to: float, within: timedelta) -> Measured:
        """Count the seconds ``path`` decodes to, up to ``up_to``, for at most ``within`` (ADR 67).

        The ``DurationMeter`` port. Refuses what ``convert`` refuses, with
        the same errors; stopped by ``within``, the count so far is kept.
        At most ``measures_at_once`` run at once; the wait for a turn counts
        against ``within``.
        """
        binary = await self._ready()
        size = await asyncio.to_thread(_regular_size, path)
        watch = _Limits(self._limits, size)
        counted = 0.0

        def note(seconds: float) -> None:
            nonlocal counted
            counted = max(counted, seconds)

        arguments = [*(self._death_signal or []), *count_command(binary, path, up_to=up_to)]
        try:
            async with asyncio.timeout(within.total_seconds()), self._turn():
                process = await _start(arguments)
                try:
                    returncode, duration, tail = await _follow(process, watch, note)
                except BaseException:
                    await _kill(process)
                    raise
        except TimeoutError:
            return Measured(counted=counted, whole=False, most=watch.allowed)
        if returncode != 0:
            raise classify_failure(
                returncode,
                tail.text(),
                input_opened=tail.input_opened,
                source_present=await asyncio.to_thread(path.exists),
            )
        if duration is None or duration <= 0:
            raise UnreadableMedia(EMPTY)
        watch.check(duration)
        return Measured(counted=duration, whole=duration < up_to, most=watch.allowed)

    def _turn(self) -> asyncio.Semaphore:
        """This event loop's turnstile of ``measure``."""
        loop = asyncio.get_running_loop()
        turns = self._turns.get(loop)
        if turns is None:
            turns = self._turns[loop] = asyncio.Semaphore(self._measures_at_once)
        return turns

    async def find_silences(self, audio: Path, *, start: float, end: float) -> tuple[Silence, ...]:
        """Run silencedetect over ``[start, end]`` of ``audio`` only; the silences it reports."""
        if not end > start >= 0:
            raise ValueError("the range to search must start at 0 or later and not be empty")
        arguments = silence_command(
            await self._ready(),
            audio,
            start=start,
            end=end,
            noise_db=self._noise_db,
            min_seconds=self._min_silence,
            output=self._output,
        )
        returncode, _, stderr = await self._run(arguments)
        if returncode != 0:
            raise ConverterUnavailable(OWN_AUDIO_UNREADABLE)
        return parse_silences(stderr, start=start, end=end)

    async def cut(self, audio: Path, target: Path, *, start: float, end: float) -> float:
        """Copy ``[start, end)`` of ``audio`` to ``target``, not re-encoded; its measured length."""
        if not end > start >= 0:
            raise ValueError("the part must start at 0 or later and not be empty")
        arguments = cut_command(
            await self._ready(), audio, target, start=start, end=end, output=self._output
        )
        returncode, _, stderr = await self._run(arguments)
        if returncode != 0:
            if any(phrase in stderr.lower() for phrase in NO_SPACE_PHRASES):
                raise DiskFull("ffmpeg found no space left to write a part of the audio")
            raise ConverterUnavailable(PART_UNWRITABLE)
        measure = measure_command(await self._ready(), target, self._output)
        returncode, stdout, _ = await self._run(measure)
        if returncode != 0:
            raise ConverterUnavailable(PART_UNWRITABLE)
        seconds = last_out_time(stdout)
        if seconds is None or seconds <= 0:
            raise ConverterUnavailable(PART_UNWRITABLE)
        return seconds

    async def _ready(self) -> str:
        """The ffmpeg binary, looked up with the death-signal prefix at first use."""
        if self._binary is None:
            self._binary = await asyncio.to_thread(find_ffmpeg)
        if self._death_signal is None:
            self._death_signal = await asyncio.to_thread(find_death_signal)
        return self._binary

    async def _run(self, arguments: list[str]) -> tuple[int, str, str]:
        """Run ffmpeg on our own audio to its end; exit code, stdout and stderr as text.

        Never shown or logged: stderr names the paths. Cancelling kills it.
        """
        process = await _start([*(self._death_signal or []), *arguments])
        try:
            stdout, stderr = await process.communicate()
        except BaseException:
            await _kill(process)
            raise
        return (
            process.returncode if process.returncode is not None else -1,
            stdout.decode("ascii", errors="replace"),
            stderr.decode("utf-8", errors="replace"),
        )


def wav_seconds(path: Path) -> float | None:
    """The length of the samples a WAV file holds; None if it is not a PCM WAV file.

    The data chunk's declared size is believed only as far as the file holds it.
    """
    try:
        with path.open("rb") as reader:
            found = wav_data(reader)
            size = os.fstat(reader.fileno()).st_size
    except OSError:
        return None
    if found is None:
        return None
    offset, declared, frame_bytes, rate = found
    return min(declared, max(0, size - offset)) // frame_bytes / rate


def wav_data(reader: BinaryIO) -> tuple[int, int, int, int] | None:
    """Where a PCM WAV file's samples start, their declared bytes, bytes per frame and rate."""
    header = reader.read(12)
    if len(header) < 12 or header[:4] != b"RIFF" or header[8:] != b"WAVE":
        return None
    frame_bytes = rate = 0
    while len(chunk := reader.read(8)) == 8:
        name, length = chunk[:4], int.from_bytes(chunk[4:], "little")
        if name == b"data":
            if not frame_bytes or not rate:
                return None
            return reader.tell(), length, frame_bytes, rate
        body = reader.read(length + (length & 1))
        if name == b"fmt " and len(body) >= 16:
            channels = int.from_bytes(body[2:4], "little")
            rate = int.from_bytes(body[4:8], "little")
            frame_bytes = channels * int.from_bytes(body[14:16], "little") // 8
    return None


def _regular_size(source: Path) -> int | None:
    """The size of ``source`` if it is a regular file; None for a pipe or a missing file."""
    try:
        status = source.stat()
    except OSError:
        return None  # ffmpeg will say what is wrong
    return status.st_size if stat.S_ISREG(status.st_mode) else None


async def _start(arguments: list[str]) -> asyncio.subprocess.Process:
    """Start ffmpeg in an empty directory that is removed as soon as ffmpeg runs.

    A relative name in whatever ffmpeg opens resolves against a removed
    directory, where nothing can be found or created.
    """
    workdir = await asyncio.to_thread(tempfile.mkdtemp, prefix="transcriber-ffmpeg-")
    try:
        return await asyncio.create_subprocess_exec(
            *arguments,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            cwd=workdir,
            # Its own session: a Ctrl-C at the terminal is ours to handle and
            # must not make ffmpeg fail a recording that is fine; and the
            # group can be killed as one.
            start_new_session=True,
        )
    except OSError:
        raise ConverterUnavailable("ffmpeg could not be started") from None
    finally:
        # Synchronous, so a cancellation cannot skip it; an empty rmdir is quick.
        _remove_empty(workdir)


def _remove_empty(folder: str) -> None:
    with contextlib.suppress(OSError):
        Path(folder).rmdir()


class _Limits:
    """The ``DecodeLimits`` applied to one source of a known (or unknown) size."""

    def __init__(self, limits: DecodeLimits, size: int | None) -> None:
        self._limits = limits
        self._size = size
        #: Seconds of audio this source may decode to.
        self.allowed = limits.allowed_seconds(size)

    def check(self, seconds: float) -> None:
        """Raise ``RecordingTooLong`` when ``seconds`` of audio pass a limit."""
        refusal = self._limits.refusal(seconds, self._size)
        if refusal is not None:
            raise refusal


class _StderrTail:
    """The last ``STDERR_TAIL_BYTES`` of stderr, whether ffmpeg opened its input, and its length.

    The length is the input's "Duration:" line, which ffmpeg prints once it
    has read the container's header, before decoding. That line is indented
    by exactly two spaces; the sender's tags above it are indented by four
    and cannot forge it.
    """

    _MARK = b"Input #0"
    _DURATION = re.compile(rb"  Duration: (\d+):(\d{2}):(\d{2}(?:\.\d+)?)")
    #: Longest line looked at for the length; longer ones are tags, skipped.
    _LINE_BYTES = 4096

    def __init__(self) -> None:
        self._buffer = bytearray()
        self.input_opened = False
        #: Seconds of audio the container declares; None until read, or if it does not say.
        self.declared: float | None = None
        self._reading_header = True
        self._line = bytearray()

    def feed(self, chunk: bytes) -> None:
        """Add ``chunk``, dropping what falls out of the tail."""
        start = max(0, len(self._buffer) - len(self._MARK))
        self._buffer += chunk
        if not self.input_opened and self._MARK in self._buffer[start:]:
            self.input_opened = True
        del self._buffer[:-STDERR_TAIL_BYTES]
        if self._reading_header:
            self._read_header(chunk)

    def _read_header(self, chunk: bytes) -> None:
        *lines, rest = (bytes(self._line) + chunk).split(b"\n")
        self._line = bytearray(rest[: self._LINE_BYTES])
        for line in lines:
            if line.startswith(b"  Duration: "):
                # The first one is the input's; later ones belong to no one we trust.
                self._reading_header = False
                match = self._DURATION.match(line)
                if match is not None and self.input_opened:
                    hours, minutes, seconds = match.groups()
                    self.declared = int(hours) * 3600 + int(minutes) * 60 + float(seconds)
                return
            if line.startswith((b"Stream mapping:", b"Output #0")):
                self._reading_header = False
                return

    def text(self) -> str:
        """The tail as text, for matching phrases only; never shown or logged."""
        return self._buffer.decode("utf-8", errors="replace")


async def _follow(
    process: asyncio.subprocess.Process, watch: _Limits, on_progress: ProgressCallback | None
) -> tuple[int, float | None, _StderrTail]:
    """Read both pipes to the end while ffmpeg runs, so neither can fill up and block it.

    Raises ``RecordingTooLong`` as soon as the declared length or the output
    written passes a limit; the caller then kills ffmpeg.
    """
    stdout, stderr = process.stdout, process.stderr
    if stdout is None or stderr is None:  # pragma: no cover - both are PIPE above
        raise ConverterUnavailable("ffmpeg's output could not be read")
    tail = _StderrTail()
    try:
        async with asyncio.TaskGroup() as group:
            progress = group.create_task(_read_progress(stdout, watch, on_progress))
            group.create_task(_read_stderr(stderr, tail, watch))
            exit_code = group.create_task(process.wait())
    except BaseExceptionGroup as group_error:
        # One failing reader (the caller's callback raising) is the error to report.
        raise group_error.exceptions[0] from None
    return exit_code.result(), progress.result(), tail


async def _read_stderr(stream: asyncio.StreamReader, tail: _StderrTail, watch: _Limits) -> None:
    declared: float | None = None
    while chunk := await stream.read(STDERR_TAIL_BYTES):
        tail.feed(chunk)
        if declared is None and tail.declared is not None:
            declared = tail.declared
            watch.check(declared)


async def _read_progress(
    stream: asyncio.StreamReader, watch: _Limits, on_progress: ProgressCallback | None
) -> float | None:
    """Report ``out_time`` at each progress block; return the last one (the duration).

    Output past the allowed length raises at once: the rest is not decoded.
    """
    latest: float | None = None
    reported = 0.0
    async for raw in stream:
        key, _, value = raw.decode("ascii", errors="replace").strip().partition("=")
        if key in ("out_time_us", "out_time_ms"):
            # Both are microseconds ("out_time_ms" is misnamed in ffmpeg).
            seconds = _microseconds(value)
            if seconds is not None:
                latest = seconds
                watch.check(latest)
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
