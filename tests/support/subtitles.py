"""Subtitle text read back with the parsers players' tooling uses (``srt``, ``webvtt-py``).

``parsed_srt`` and ``parsed_vtt`` parse the text and assert the cue rules
on what the parser saw (ADR 34): at most 2 lines of 42 characters, at most
7 s, each cue ending after it starts and no earlier than the one before it
ends. They return each cue as ``(start, end, lines)`` in seconds.
"""

from __future__ import annotations

import html

import srt
import webvtt

#: A cue as a parser read it: start and end in seconds, and its lines.
ParsedCue = tuple[float, float, list[str]]

MAX_LINES = 2
MAX_LINE_CHARS = 42
MAX_CUE_SECONDS = 7.0
#: Timestamps are written to the millisecond.
EPSILON = 0.0005


def check_rules(found: list[ParsedCue], *, timed: bool = True) -> None:
    """Every cue keeps the limits; cues follow each other without overlapping.

    Without timings (``timed=False``) the one cue spans the recording, so
    only its line width is checked.
    """
    previous_end = 0.0
    for start, end, lines in found:
        assert all(0 < len(line) <= MAX_LINE_CHARS for line in lines), lines
        assert end > start, (start, end)
        assert start >= previous_end - EPSILON, (previous_end, start)
        if timed:
            assert len(lines) <= MAX_LINES, lines
            assert end - start <= MAX_CUE_SECONDS + EPSILON, (start, end)
        previous_end = end


def parsed_srt(text: str, *, timed: bool = True) -> list[ParsedCue]:
    """The cues of SubRip ``text`` as ``srt`` parses them (strictly), checked against the rules."""
    subtitles = list(srt.parse(text, ignore_errors=False))
    assert [subtitle.index for subtitle in subtitles] == list(range(1, len(subtitles) + 1))
    found = [
        (s.start.total_seconds(), s.end.total_seconds(), s.content.split("\n")) for s in subtitles
    ]
    check_rules(found, timed=timed)
    return found


def parsed_vtt(text: str, *, timed: bool = True) -> list[ParsedCue]:
    """The cues of WebVTT ``text`` as ``webvtt-py`` parses them, entities decoded, checked."""
    captions = webvtt.from_string(text).captions
    found = [
        (
            caption.start_time.in_milliseconds() / 1000,
            caption.end_time.in_milliseconds() / 1000,
            [html.unescape(line) for line in caption.lines],
        )
        for caption in captions
    ]
    check_rules(found, timed=timed)
    return found
