"""A converter that decodes nothing: it measures a recording by its size and writes a stub."""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

import attrs

from transcriber_adapters._threads import in_thread
from transcriber_core.errors import ConverterUnavailable, UnreadableMedia
from transcriber_core.policy import DEFAULT_DECODE_LIMITS, DecodeLimits
from transcriber_core.ports import ProgressCallback, Silence

#: Bytes that count as one second of recording, unless told otherwise.
BYTES_PER_SECOND = 16_000
#: A recording starting with these bytes is "not audio", unless told otherwise.
NOT_AUDIO = b"NOT AUDIO"
#: The duration a stub output names.
_STUB_SECONDS = re.compile(rb"^OggS memory-converter .* ([0-9.]+) s\n")


@attrs.frozen(kw_only=True)
class ConvertCall:
    """One call made on a MemoryConverter."""

    source: Path
    target: Path
    #: Whether the caller asked for a background (long recording's) conversion.
    background: bool = False


class MemoryConverter:
    """Pretends to convert, for demos and tests; passes the converter contract.

    The rule: an empty recording, or one that starts with ``not_audio``, is
    ``UnreadableMedia``. Any other is ``duration`` seconds long when that is
    set, else its size divided by ``bytes_per_second``; a duration past
    ``limits`` for its size is ``RecordingTooLong``. The output is a few
    bytes that name the input's size and the duration, the same for the same
    input. ``fail_next`` makes the next calls raise; ``calls`` records them.

    Its own output has the ``silences`` it was given, wherever they fall
    inside a searched range; ``cut`` writes a stub naming the range and
    records it in ``cuts``.
    """

    def __init__(
        self,
        *,
        duration: float | None = None,
        bytes_per_second: int = BYTES_PER_SECOND,
        not_audio: bytes = NOT_AUDIO,
        limits: DecodeLimits = DEFAULT_DECODE_LIMITS,
        silences: Sequence[Silence] = (),
    ) -> None:
        self.duration = duration
        self.silences = tuple(silences)
        #: Every range cut, in order.
        self.cuts: list[tuple[float, float]] = []
        self.limits = limits
        self.bytes_per_second = bytes_per_second
        self.not_audio = not_audio
        #: Every call, in order, including those that failed.
        self.calls: list[ConvertCall] = []
        self._failures: list[BaseException] = []

    def reset(self) -> None:
        """Forget every call and pending failure."""
        self.calls.clear()
        self.cuts.clear()
        self._failures.clear()

    def fail_next(self, error: BaseException) -> None:
        """Make the next ``convert`` raise ``error`` (queued: each call takes one)."""
        self._failures.append(error)

    @property
    def output_extension(self) -> str:
        """Ogg, like the real converter."""
        return ".ogg"

    async def convert(
        self,
        source: Path,
        target: Path,
        *,
        on_progress: ProgressCallback | None = None,
        background: bool = False,
    ) -> float:
        """Measure ``source``, write a stub to ``target``, report half-way and the end."""
        self.calls.append(ConvertCall(source=source, target=target, background=background))
        if self._failures:
            raise self._failures.pop(0)
        try:
            size, head = await in_thread(_measure, source, len(self.not_audio))
        except OSError:
            raise ConverterUnavailable("the recording to convert could not be read") from None
        if size == 0 or (self.not_audio and head == self.not_audio):
            raise UnreadableMedia("the recording is not a format the converter can decode")
        duration = self.duration if self.duration is not None else size / self.bytes_per_second
        refusal = self.limits.refusal(duration, size)
        if refusal is not None:
            raise refusal
        if on_progress is not None:
            on_progress(duration / 2)
        output = f"OggS memory-converter {size} bytes {duration:.3f} s\n".encode("ascii")
        try:
            await in_thread(target.write_bytes, output)
        except OSError:
            raise ConverterUnavailable("the converted audio could not be written") from None
        if on_progress is not None:
            on_progress(duration)
        return duration

    async def find_silences(self, audio: Path, *, start: float, end: float) -> tuple[Silence, ...]:
        """The given ``silences`` that overlap ``[start, end]``, clipped to it."""
        if not end > start >= 0:
            raise ValueError("the range to search must start at 0 or later and not be empty")
        await self._read(audio)
        found = []
        for silence in sorted(self.silences, key=lambda silence: silence.start):
            clipped = Silence(start=max(start, silence.start), end=min(end, silence.end))
            if clipped.end > clipped.start:
                found.append(clipped)
        return tuple(found)

    async def cut(self, audio: Path, target: Path, *, start: float, end: float) -> float:
        """Write a stub naming ``[start, end)``; its length, up to the end of ``audio``."""
        if not end > start >= 0:
            raise ValueError("the part must start at 0 or later and not be empty")
        data = await self._read(audio)
        match = _STUB_SECONDS.match(data)
        if match is not None:
            end = min(end, float(match.group(1)))
        seconds = max(0.0, end - start)
        self.cuts.append((start, end))
        output = f"OggS memory-converter part {start:.3f} {seconds:.3f} s\n".encode("ascii")
        try:
            await in_thread(target.write_bytes, output)
        except OSError:
            raise ConverterUnavailable("a part of the audio could not be written") from None
        return seconds

    async def _read(self, audio: Path) -> bytes:
        try:
            return await in_thread(audio.read_bytes)
        except OSError:
            raise ConverterUnavailable("the converted audio could not be read") from None


def _measure(source: Path, head_size: int) -> tuple[int, bytes]:
    with source.open("rb") as reader:
        return source.stat().st_size, reader.read(head_size)
