"""How long a recording says it lasts, read from its container's header without decoding.

Intake uses the answer to pick a lane (ADR 27). It reads a few
kilobytes at most, in a thread, and knows three containers: WAV (data size
over byte rate), Ogg (the last page's granule position over the first
stream's rate: every Telegram voice note) and MP4/MOV/M4A (``mvhd``).
Anything else, or anything odd, is "does not say": None, never an error.

The answer is the sender's claim. A lie can only hurt the liar: a file
that claims to be short and is not is stopped by the convert step at the
express limit and sent to the general lane.
"""

from __future__ import annotations

import os
import struct
from pathlib import Path
from typing import BinaryIO

from transcriber_adapters._threads import in_thread

#: How far from the end of an Ogg file the last page is looked for.
OGG_TAIL_BYTES = 64 * 1024
#: Most boxes or chunks walked before giving up: a header is never this fragmented.
MAX_CHUNKS = 64
#: Largest ``moov`` box read whole to find ``mvhd`` in it.
MAX_MOOV_BYTES = 1024 * 1024

_OGG = b"OggS"


class HeaderProbe:
    """The ``DurationProbe`` port on container headers; never decodes, never raises for a file."""

    async def declared_duration(self, path: Path) -> float | None:
        """Seconds the header declares, or None."""
        return await in_thread(read_declared_duration, path)


def read_declared_duration(path: Path) -> float | None:
    """Seconds ``path``'s container header declares, or None; blocking."""
    try:
        with path.open("rb") as stream:
            head = stream.read(12)
            if head[:4] == b"RIFF" and head[8:12] == b"WAVE":
                seconds = _wav(stream)
            elif head[:4] == _OGG:
                seconds = _ogg(stream)
            elif head[4:8] in (b"ftyp", b"moov", b"mdat", b"free", b"wide", b"skip"):
                seconds = _mp4(stream)
            else:
                return None
    except (OSError, struct.error, ValueError, IndexError, ZeroDivisionError):
        return None
    if seconds is None or not 0 < seconds < float("inf"):
        return None
    return seconds


def _wav(stream: BinaryIO) -> float | None:
    """The ``data`` chunk's size over the ``fmt`` chunk's average bytes per second."""
    stream.seek(12)
    byte_rate = None
    for _ in range(MAX_CHUNKS):
        header = stream.read(8)
        if len(header) < 8:
            return None
        kind, size = header[:4], struct.unpack("<I", header[4:])[0]
        if kind == b"fmt ":
            fmt = stream.read(size)
            if len(fmt) < 12:
                return None
            byte_rate = struct.unpack("<I", fmt[8:12])[0]
            stream.seek(size % 2, os.SEEK_CUR)
        elif kind == b"data":
            if not byte_rate:
                return None
            if size in (0, 0xFFFFFFFF):
                # A streamed WAV leaves the size open: the rest of the file is the data.
                here = stream.tell()
                size = stream.seek(0, os.SEEK_END) - here
            return float(size / byte_rate)
        else:
            stream.seek(size + size % 2, os.SEEK_CUR)
    return None


def _ogg(stream: BinaryIO) -> float | None:
    """The last page's granule position over the first stream's rate (Opus: 48 kHz)."""
    stream.seek(0)
    first = stream.read(27 + 255)
    segments = first[26]
    body_start = 27 + segments
    stream.seek(body_start)
    body = stream.read(20)
    serial = first[14:18]
    if body.startswith(b"OpusHead"):
        rate, skip = 48_000, struct.unpack("<H", body[10:12])[0]
    elif body.startswith(b"\x01vorbis"):
        rate, skip = struct.unpack("<I", body[12:16])[0], 0
    else:
        return None
    end = stream.seek(0, os.SEEK_END)
    stream.seek(max(0, end - OGG_TAIL_BYTES))
    tail = stream.read(OGG_TAIL_BYTES)
    at = len(tail)
    while True:
        at = tail.rfind(_OGG, 0, at)
        if at < 0 or at + 27 > len(tail):
            return None
        if tail[at + 14 : at + 18] == serial:
            granule = struct.unpack("<q", tail[at + 6 : at + 14])[0]
            if granule < 0:
                return None
            return float((granule - skip) / rate)


def _mp4(stream: BinaryIO) -> float | None:
    """``mvhd``'s duration over its timescale, found by walking the top-level boxes."""
    stream.seek(0)
    end = stream.seek(0, os.SEEK_END)
    at = 0
    for _ in range(MAX_CHUNKS):
        if at + 8 > end:
            return None
        stream.seek(at)
        size, kind = struct.unpack(">I4s", stream.read(8))
        header = 8
        if size == 1:
            size = struct.unpack(">Q", stream.read(8))[0]
            header = 16
        elif size == 0:
            size = end - at
        if size < header:
            return None
        if kind == b"moov":
            if size > MAX_MOOV_BYTES:
                return None
            return _mvhd(stream.read(size - header))
        at += size
    return None


def _mvhd(moov: bytes) -> float | None:
    at = 0
    while at + 8 <= len(moov):
        size, kind = struct.unpack(">I4s", moov[at : at + 8])
        if size < 8:
            return None
        if kind == b"mvhd":
            box = moov[at + 8 : at + size]
            if box[0] == 1:
                timescale, duration = struct.unpack(">IQ", box[20:32])
            else:
                timescale, duration = struct.unpack(">II", box[12:20])
            return float(duration / timescale)
        at += size
    return None
