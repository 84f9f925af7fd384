"""Where a recording too long for one recognition is cut, and how its parts' texts are joined.

Pure rules in the shape of ``transitions.py`` (ADR 26). The recognize step
asks ``part_length`` whether the converted audio must be split; for each
part it asks ``search_window`` where a silence would make a good end, has
the converter look for silences there only, and lets ``choose_cut`` pick
the cut: the middle of the latest silence in the window, else a hard cut at
the window's end. The check step joins the finished parts with
``join_parts``.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

import attrs

from transcriber_core.entities import JobPart, Word
from transcriber_core.ports import RecognizerLimits, Silence

#: How far before a part's longest end a silence is looked for, in seconds.
SILENCE_SEARCH_SECONDS = 300.0
#: A part ends this far before the limit at most, so codec frames cannot carry it past.
CUT_MARGIN_SECONDS = 2.0
#: The margin is at most this share of the limit (small limits, in tests).
CUT_MARGIN_SHARE = 0.01
#: Share of a byte limit that parts are planned to fill: VBR audio is denser in places.
BYTES_HEADROOM = 0.9


@attrs.frozen(kw_only=True)
class Window:
    """Where a silence may end the current part: from ``start`` to ``end`` seconds."""

    start: float
    end: float


def part_length(limits: RecognizerLimits, *, seconds: float | None, size: int) -> float | None:
    """The longest part to cut, in seconds; None when the audio goes whole to the recognizer.

    Audio that fits the limits goes whole. So does audio whose length was
    not measured: it is not split blindly, and the recognizer refuses it,
    naming its limit, when it is too big. A byte limit becomes seconds at the
    audio's average rate, with headroom.
    """
    if seconds is None or not math.isfinite(seconds) or seconds <= 0:
        return None
    if limits.refusal(seconds=seconds, size=size) is None:
        return None
    longest = math.inf if limits.max_seconds is None else limits.max_seconds
    if limits.max_bytes is not None and size > 0:
        bytes_per_second = size / seconds
        longest = min(longest, limits.max_bytes * BYTES_HEADROOM / bytes_per_second)
    margin = min(CUT_MARGIN_SECONDS, longest * CUT_MARGIN_SHARE)
    return longest - margin


def search_window(start: float, *, seconds: float, longest: float) -> Window | None:
    """Where to look for a silence to end the part that begins at ``start``; None: the rest fits.

    The window is the last ``SILENCE_SEARCH_SECONDS`` before the part's
    longest end, but never more than a quarter of the part, so no part is
    cut much shorter than it may be.
    """
    if longest <= 0:
        raise ValueError("the longest part must be positive")
    if seconds - start <= longest:
        return None
    end = start + longest
    return Window(start=end - min(SILENCE_SEARCH_SECONDS, longest / 4), end=end)


def choose_cut(window: Window, silences: Sequence[Silence]) -> float:
    """The middle of the latest silence that overlaps ``window`` (clipped to it), else its end."""
    best: float | None = None
    for silence in silences:
        start, end = max(silence.start, window.start), min(silence.end, window.end)
        if end < start:
            continue
        middle = (start + end) / 2
        if best is None or middle > best:
            best = middle
    return window.end if best is None else best


def plan_ranges(seconds: float, cuts: Sequence[float]) -> list[tuple[float, float]]:
    """The ``(start, end)`` of each part, from the cut points in order and the audio's length."""
    edges = [0.0, *cuts, seconds]
    if any(later <= earlier for earlier, later in itertools.pairwise(edges)):
        raise ValueError("cut points must rise strictly inside the recording")
    return list(itertools.pairwise(edges))


def join_parts(parts: Sequence[JobPart]) -> tuple[str, tuple[Word, ...]]:
    """The transcript of a split job: texts in order, words shifted by each part's start.

    Raises ``ValueError`` when a part is not done, or the parts are not
    ``0..n-1`` in order: a transcript with a hole must never be sent.
    """
    texts: list[str] = []
    words: list[Word] = []
    for expected, part in enumerate(parts):
        if part.index != expected:
            raise ValueError("the parts of a job must be numbered 0..n-1 in order")
        if part.text is None:
            raise ValueError(f"part {part.index} is not done")
        text = part.text.strip()
        if text:
            texts.append(text)
        words.extend(
            Word(text=word.text, start=word.start + part.start, end=word.end + part.start)
            for word in part.words
        )
    return " ".join(texts), tuple(words)
