"""Where a recording too long for one recognition is cut, and how its parts' texts are joined.

Pure rules in the shape of ``transitions.py`` (ADR 26). The recognize step
asks ``part_length`` whether the converted audio must be split; for each
part it asks ``search_window`` where a silence would make a good end, has
the converter look for silences there only, and lets ``choose_cut`` pick
the cut: the middle of the latest silence in the window, else a cut inside
speech near the window's end, where the two parts overlap by
``CUT_OVERLAP_SECONDS`` on each side (ADR 62). The check step joins the
finished parts with ``join_parts``; at an overlap ``seam`` keeps each word
once, by the parts' word timings.
"""

from __future__ import annotations

import itertools
import math
import re
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
#: How far past a cut inside speech each of its two parts reaches, in seconds (ADR 62):
#: a word the cut falls in is whole in both, and each part's edge, where a decoder
#: guesses, is that far from the seam.
CUT_OVERLAP_SECONDS = 2.0
#: The overlap is at most this share of the longest part (small limits, in tests).
CUT_OVERLAP_SHARE = 0.05
#: Two parts' words at a seam are one word heard twice when their texts are the same and
#: their middles this close, in seconds (word timings of a small model drift this much).
SAME_WORD_SECONDS = 1.0


@attrs.frozen(kw_only=True)
class Window:
    """Where a silence may end the current part: from ``start`` to ``end`` seconds."""

    start: float
    end: float
    #: How far each part reaches past a cut inside speech, should no silence be found.
    overlap: float = 0.0


@attrs.frozen(kw_only=True)
class Cut:
    """Where one part ends and the next begins, at ``at`` seconds."""

    at: float
    #: 0 for a cut in a silence; else how far each part reaches past ``at`` (a cut inside speech).
    overlap: float = 0.0

    @property
    def next_start(self) -> float:
        """Where the next part begins: the cut, or ``overlap`` before it."""
        return self.at - self.overlap


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
    cut much shorter than it may be. ``start`` is where the part begins,
    overlap included.
    """
    if longest <= 0:
        raise ValueError("the longest part must be positive")
    if seconds - start <= longest:
        return None
    end = start + longest
    overlap = min(CUT_OVERLAP_SECONDS, longest * CUT_OVERLAP_SHARE)
    return Window(start=end - min(SILENCE_SEARCH_SECONDS, longest / 4), end=end, overlap=overlap)


def choose_cut(window: Window, silences: Sequence[Silence]) -> Cut:
    """The middle of the latest silence in ``window`` (clipped to it), else a cut inside speech.

    A cut inside speech is ``window.overlap`` before the window's end, so the
    part still ends within it when it reaches that far past the cut.
    """
    best: float | None = None
    for silence in silences:
        start, end = max(silence.start, window.start), min(silence.end, window.end)
        if end < start:
            continue
        middle = (start + end) / 2
        if best is None or middle > best:
            best = middle
    if best is None:
        return Cut(at=window.end - window.overlap, overlap=window.overlap)
    return Cut(at=best)


def plan_ranges(seconds: float, cuts: Sequence[Cut]) -> list[tuple[float, float]]:
    """The ``(start, end)`` of each part, from the cuts in order and the audio's length.

    Parts follow each other end to start at a cut in a silence, and overlap
    by twice its ``overlap`` at a cut inside speech.
    """
    edges = [0.0, *(cut.at for cut in cuts), seconds]
    if any(later <= earlier for earlier, later in itertools.pairwise(edges)):
        raise ValueError("cut points must rise strictly inside the recording")
    starts = [0.0, *(max(0.0, cut.next_start) for cut in cuts)]
    ends = [*(min(seconds, cut.at + cut.overlap) for cut in cuts), seconds]
    return list(zip(starts, ends, strict=True))


def join_parts(parts: Sequence[JobPart]) -> tuple[str, tuple[Word, ...]]:
    """The transcript of a split job: texts in order, words shifted by each part's start.

    Where two parts overlap (a cut inside speech), ``seam`` keeps each word
    once and the parts' texts are made of the words kept; a part without word
    timings keeps its whole text. Raises ``ValueError`` when a part is not
    done, or the parts are not ``0..n-1`` in order: a transcript with a hole
    must never be sent.
    """
    kept: list[list[Word]] = []
    for expected, part in enumerate(parts):
        if part.index != expected:
            raise ValueError("the parts of a job must be numbered 0..n-1 in order")
        if part.text is None:
            raise ValueError(f"part {part.index} is not done")
        # Speaker labels are dropped, as before ADR 62: each part's recognition numbers its own.
        kept.append(
            [
                Word(text=word.text, start=word.start + part.start, end=word.end + part.start)
                for word in part.words
            ]
        )
    for index, (earlier, later) in enumerate(itertools.pairwise(parts)):
        if later.start < earlier.end:
            kept[index], kept[index + 1] = seam(
                kept[index], kept[index + 1], start=later.start, end=earlier.end
            )
    texts: list[str] = []
    for part, words in zip(parts, kept, strict=True):
        whole = len(words) == len(part.words)
        text = (part.text or "").strip() if whole else " ".join(word.text for word in words)
        if text:
            texts.append(text)
    return " ".join(texts), tuple(itertools.chain.from_iterable(kept))


def seam(
    earlier: Sequence[Word], later: Sequence[Word], *, start: float, end: float
) -> tuple[list[Word], list[Word]]:
    """The words of two parts that overlap from ``start`` to ``end`` seconds, each kept once.

    Both parts heard the overlap. Their words there are aligned by text and
    time (their longest common subsequence, ``SAME_WORD_SECONDS`` apart at most); the
    earlier part's words are kept up to the aligned word nearest the
    overlap's middle, the later part's after it. With nothing aligned, each
    keeps the words whose middle is on its side of the overlap's middle; a
    part that heard nothing there leaves the overlap to the other.
    """
    middle = (start + end) / 2
    # Words wholly before the overlap, or after it, cannot be heard twice.
    first = next((i for i, word in enumerate(earlier) if word.end > start), len(earlier))
    last = next((j for j, word in enumerate(later) if word.start >= end), len(later))
    tail, head = earlier[first:], later[:last]
    if not tail or not head:
        return list(earlier), list(later)
    pairs = _aligned(tail, head)
    if pairs:
        i, j = min(
            pairs,
            key=lambda pair: abs((_middle(tail[pair[0]]) + _middle(head[pair[1]])) / 2 - middle),
        )
        return list(earlier[: first + i + 1]), list(later[j + 1 :])
    return (
        [word for word in earlier if _middle(word) < middle],
        [word for word in later if _middle(word) >= middle],
    )


def _middle(word: Word) -> float:
    return (word.start + word.end) / 2


def _spelled(word: Word) -> str:
    """A word as compared across parts: lower case, without punctuation."""
    return re.sub(r"[^\w']", "", word.text.lower())


def _same(a: Word, b: Word) -> bool:
    spelled = _spelled(a)
    return (
        bool(spelled)
        and spelled == _spelled(b)
        and abs(_middle(a) - _middle(b)) <= SAME_WORD_SECONDS
    )


def _aligned(a: Sequence[Word], b: Sequence[Word]) -> list[tuple[int, int]]:
    """The pairs ``(i, j)`` of the longest common subsequence of ``a`` and ``b`` (closest)."""
    # best[i][j]: (matches, minus the time drift of the matched pairs) over a[i:] and b[j:]
    best = [[(0, 0.0)] * (len(b) + 1) for _ in range(len(a) + 1)]
    for i in reversed(range(len(a))):
        for j in reversed(range(len(b))):
            options = [best[i + 1][j], best[i][j + 1]]
            if _same(a[i], b[j]):
                matches, drift = best[i + 1][j + 1]
                options.append((matches + 1, drift - abs(_middle(a[i]) - _middle(b[j]))))
            best[i][j] = max(options)
    pairs: list[tuple[int, int]] = []
    i = j = 0
    while i < len(a) and j < len(b):
        if best[i][j] == best[i + 1][j]:
            i += 1
        elif best[i][j] == best[i][j + 1]:
            j += 1
        else:
            pairs.append((i, j))
            i, j = i + 1, j + 1
    return pairs
