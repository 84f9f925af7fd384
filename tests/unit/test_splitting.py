"""The pure splitting rules: when to split, where to cut, how the parts' texts are joined."""

from __future__ import annotations

import itertools

import pytest

from transcriber_core.entities import JobPart, Word
from transcriber_core.ports import RecognizerLimits, Silence
from transcriber_core.splitting import (
    CUT_MARGIN_SECONDS,
    SILENCE_SEARCH_SECONDS,
    Window,
    choose_cut,
    join_parts,
    part_length,
    plan_ranges,
    search_window,
)

HOUR = RecognizerLimits(max_seconds=3600)


def plan(seconds: float, longest: float, silences: list[Silence]) -> list[tuple[float, float]]:
    """The ranges the recognize step would choose, with every silence known up front."""
    cuts: list[float] = []
    start = 0.0
    while (window := search_window(start, seconds=seconds, longest=longest)) is not None:
        inside = [s for s in silences if s.end >= window.start and s.start <= window.end]
        start = choose_cut(window, inside)
        cuts.append(start)
    return plan_ranges(seconds, cuts)


def test_audio_within_the_limits_goes_whole() -> None:
    """A recording that fits is not split: no part length."""
    assert part_length(HOUR, seconds=3600, size=10**6) is None


def test_unmeasured_audio_is_not_split_blindly() -> None:
    """Without a measured length the audio goes whole, whatever its size."""
    limits = RecognizerLimits(max_seconds=60, max_bytes=100)
    assert part_length(limits, seconds=None, size=10**9) is None


def test_longer_audio_gets_a_part_length_under_the_limit_by_the_margin() -> None:
    """Parts end a codec-safe margin before the limit."""
    assert part_length(HOUR, seconds=3601, size=10**6) == 3600 - CUT_MARGIN_SECONDS


def test_byte_limit_becomes_seconds_at_the_average_rate() -> None:
    """A file too big for the byte limit is split into parts whose bytes fit, with headroom."""
    limits = RecognizerLimits(max_bytes=1000)
    longest = part_length(limits, seconds=100, size=4000)  # 40 bytes a second
    assert longest is not None
    assert longest * 40 <= 1000 * 0.9


def test_the_tighter_limit_wins() -> None:
    """Seconds and bytes both apply; the part is short enough for both."""
    limits = RecognizerLimits(max_seconds=50, max_bytes=10**9)
    longest = part_length(limits, seconds=100, size=100)
    assert longest is not None
    assert longest < 50


def test_the_rest_that_fits_ends_the_plan() -> None:
    """No window is searched once the rest of the audio fits in one part."""
    assert search_window(100, seconds=150, longest=60) is None


def test_window_is_the_last_minutes_before_the_limit() -> None:
    """The search covers SILENCE_SEARCH_SECONDS before the part's longest end."""
    window = search_window(1000, seconds=10_000, longest=3598)
    assert window == Window(start=4598 - SILENCE_SEARCH_SECONDS, end=4598)


def test_window_of_a_short_part_is_a_quarter_of_it() -> None:
    """A small limit keeps parts at least three quarters long."""
    assert search_window(0, seconds=100, longest=20) == Window(start=15, end=20)


def test_cut_in_the_middle_of_the_latest_silence() -> None:
    """Of several silences in the window the latest is used, cut at its middle."""
    window = Window(start=100, end=200)
    silences = [Silence(start=120, end=122), Silence(start=180, end=184), Silence(start=10, end=20)]
    assert choose_cut(window, silences) == 182


def test_silence_past_the_window_is_clipped() -> None:
    """A silence that runs past the limit is cut inside the window, never after it."""
    assert choose_cut(Window(start=100, end=200), [Silence(start=196, end=260)]) == 198


def test_no_silence_is_a_hard_cut_at_the_window_end() -> None:
    """Speech without a pause is cut at the longest length allowed."""
    assert choose_cut(Window(start=100, end=200), []) == 200


def test_two_and_a_half_hours_with_pauses_make_three_parts_cut_in_pauses() -> None:
    """A 2.5 h recording with a pause every 500 s and a 1 h limit: three parts, cuts in pauses."""
    longest = part_length(HOUR, seconds=9000, size=10**7)
    assert longest is not None
    pauses = [Silence(start=t, end=t + 2) for t in range(500, 9000, 500)]
    ranges = plan(9000, longest, pauses)
    assert ranges == [(0.0, 3501.0), (3501.0, 7001.0), (7001.0, 9000)]
    assert all(end - start <= 3600 for start, end in ranges)


def test_ranges_cover_the_recording_without_gaps() -> None:
    """Hard cuts too: the parts follow each other end to start and cover everything."""
    ranges = plan(10_000, 3598, [])
    assert ranges[0][0] == 0
    assert ranges[-1][1] == 10_000
    assert all(a[1] == b[0] for a, b in itertools.pairwise(ranges))
    assert all(end - start <= 3598 for start, end in ranges)


def test_cut_points_must_rise() -> None:
    """A plan with a cut out of order is a bug, refused."""
    with pytest.raises(ValueError, match="rise"):
        plan_ranges(100, [60, 40])


def part(index: int, start: float, text: str | None, *words: Word) -> JobPart:
    """A part of job "j" from ``start`` lasting 100 s."""
    return JobPart(job_id="j", index=index, start=start, end=start + 100, text=text, words=words)


def test_join_keeps_order_and_shifts_timings() -> None:
    """Texts join in part order; each word moves by its part's start, so timings rise."""
    parts = [
        part(0, 0, "one two", Word(text="one", start=1, end=2), Word(text="two", start=3, end=4)),
        part(1, 100, " three ", Word(text="three", start=1, end=2)),
    ]
    text, words = join_parts(parts)
    assert text == "one two three"
    assert [(w.text, w.start, w.end) for w in words] == [
        ("one", 1, 2),
        ("two", 3, 4),
        ("three", 101, 102),
    ]


def test_join_skips_empty_texts() -> None:
    """A part with nothing said adds no double space."""
    assert join_parts([part(0, 0, "a"), part(1, 100, ""), part(2, 200, "b")])[0] == "a b"


def test_join_refuses_a_part_not_done() -> None:
    """A transcript with a hole is never made."""
    with pytest.raises(ValueError, match="not done"):
        join_parts([part(0, 0, "a"), part(1, 100, None)])


def test_join_refuses_parts_out_of_order() -> None:
    """Parts must come as 0..n-1; a missing one is not skipped silently."""
    with pytest.raises(ValueError, match="numbered"):
        join_parts([part(0, 0, "a"), part(2, 200, "c")])


def test_limits_refusal_names_the_limit() -> None:
    """The reason a recognizer gives for audio over its limit names the number."""
    limits = RecognizerLimits(max_seconds=14400, max_bytes=1_000_000_000)
    assert "14400 seconds" in (limits.refusal(seconds=15000, size=1) or "")
    assert "1000000000 bytes" in (limits.refusal(seconds=None, size=2 * 10**9) or "")
    assert limits.refusal(seconds=None, size=10) is None


def test_limits_must_be_positive() -> None:
    """A zero limit would split forever; it is refused."""
    with pytest.raises(ValueError, match="max_seconds"):
        RecognizerLimits(max_seconds=0)
