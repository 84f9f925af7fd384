"""The pure splitting rules: when to split, where to cut, how the parts' texts are joined."""

from __future__ import annotations

import itertools

import pytest

from transcriber_core.entities import JobPart, Word
from transcriber_core.ports import RecognizerLimits, Silence
from transcriber_core.splitting import (
    CUT_MARGIN_SECONDS,
    CUT_OVERLAP_SECONDS,
    SILENCE_SEARCH_SECONDS,
    Cut,
    Window,
    choose_cut,
    join_parts,
    part_length,
    plan_ranges,
    seam,
    search_window,
)

HOUR = RecognizerLimits(max_seconds=3600)


def plan(seconds: float, longest: float, silences: list[Silence]) -> list[tuple[float, float]]:
    """The ranges the recognize step would choose, with every silence known up front."""
    cuts: list[Cut] = []
    start = 0.0
    while (window := search_window(start, seconds=seconds, longest=longest)) is not None:
        inside = [s for s in silences if s.end >= window.start and s.start <= window.end]
        cuts.append(cut := choose_cut(window, inside))
        start = cut.next_start
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
    assert window == Window(
        start=4598 - SILENCE_SEARCH_SECONDS, end=4598, overlap=CUT_OVERLAP_SECONDS
    )


def test_window_of_a_short_part_is_a_quarter_of_it() -> None:
    """A small limit keeps parts at least three quarters long."""
    assert search_window(0, seconds=100, longest=20) == Window(start=15, end=20, overlap=1)


def test_cut_in_the_middle_of_the_latest_silence() -> None:
    """Of several silences in the window the latest is used, cut at its middle."""
    window = Window(start=100, end=200)
    silences = [Silence(start=120, end=122), Silence(start=180, end=184), Silence(start=10, end=20)]
    assert choose_cut(window, silences) == Cut(at=182)


def test_silence_past_the_window_is_clipped() -> None:
    """A silence that runs past the limit is cut inside the window, never after it."""
    assert choose_cut(Window(start=100, end=200), [Silence(start=196, end=260)]) == Cut(at=198)


def test_no_silence_is_a_cut_inside_speech_that_overlaps() -> None:
    """Speech without a pause is cut an overlap before the window's end, the parts overlapping."""
    cut = choose_cut(Window(start=100, end=200, overlap=2), [])
    assert cut == Cut(at=198, overlap=2)
    assert cut.next_start == 196


def test_two_and_a_half_hours_with_pauses_make_three_parts_cut_in_pauses() -> None:
    """A 2.5 h recording with a pause every 500 s and a 1 h limit: three parts, cuts in pauses."""
    longest = part_length(HOUR, seconds=9000, size=10**7)
    assert longest is not None
    pauses = [Silence(start=t, end=t + 2) for t in range(500, 9000, 500)]
    ranges = plan(9000, longest, pauses)
    assert ranges == [(0.0, 3501.0), (3501.0, 7001.0), (7001.0, 9000)]
    assert all(end - start <= 3600 for start, end in ranges)


def test_cuts_inside_speech_overlap_and_fit_the_limit() -> None:
    """Without pauses parts overlap by twice CUT_OVERLAP_SECONDS, cover all, and fit the limit."""
    ranges = plan(10_000, 3598, [])
    assert ranges[0][0] == 0
    assert ranges[-1][1] == 10_000
    assert all(a[1] - b[0] == 2 * CUT_OVERLAP_SECONDS for a, b in itertools.pairwise(ranges))
    assert all(end - start <= 3598 for start, end in ranges)


def test_a_part_after_an_overlap_still_fits_when_cut_in_a_silence() -> None:
    """A part that begins inside the overlap is measured from there: it fits the limit too."""
    ranges = plan(10_000, 3598, [Silence(start=7188, end=7196)])
    assert ranges[1] == (3594.0, 7190.0)
    assert ranges[2][0] == 7190.0
    assert all(end - start <= 3598 for start, end in ranges)


def test_cut_points_must_rise() -> None:
    """A plan with a cut out of order is a bug, refused."""
    with pytest.raises(ValueError, match="rise"):
        plan_ranges(100, [Cut(at=60), Cut(at=40)])


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


def w(text: str, start: float, end: float | None = None) -> Word:
    """A word at ``start`` seconds, lasting 0.4 s unless ``end`` says."""
    return Word(text=text, start=start, end=start + 0.4 if end is None else end)


def texts(words: list[Word]) -> list[str]:
    """The words' texts, in order."""
    return [word.text for word in words]


def sewn(earlier: list[Word], later: list[Word]) -> list[str]:
    """The texts of the words ``seam`` keeps of two parts overlapping from 8 s to 12 s."""
    kept_earlier, kept_later = seam(earlier, later, start=8, end=12)
    return texts(kept_earlier + kept_later)


def test_seam_keeps_a_word_straddling_the_middle_once() -> None:
    """The word the cut falls in, heard whole by both parts, is kept once."""
    earlier = [w("the", 7), w("lazy", 7.5), w("dog", 9.8, 10.3), w("please", 10.6), w("sen", 11.6)]
    later = [w("zy", 8.1), w("dog", 9.9, 10.35), w("please", 10.7), w("send", 11.5), w("the", 12)]
    assert sewn(earlier, later) == ["the", "lazy", "dog", "please", "send", "the"]


def test_seam_keeps_a_straddling_word_when_timings_disagree_about_the_middle() -> None:
    """Each part puts the word's middle on the other's side: aligned by text, it is not lost."""
    earlier = [w("a", 8.5), w("fox", 9.7, 10.1), w("ran", 10.8)]
    later = [w("a", 8.6), w("fox", 9.8, 10.3), w("ran", 10.9)]
    assert sewn(earlier, later) == ["a", "fox", "ran"]
    # by the middle alone "fox" would be lost: its middle is 9.9 in the earlier, 10.05 in the later


def test_seam_keeps_repeated_words_as_often_as_said() -> None:
    """The same word twice on both sides is aligned pair by pair, not once."""
    earlier = [w("that", 9.0), w("that", 9.6), w("is", 10.2), w("it", 10.8)]
    later = [w("that", 9.1), w("that", 9.7), w("is", 10.3), w("it", 10.9), w("now", 11.5)]
    assert sewn(earlier, later) == [
        "that",
        "that",
        "is",
        "it",
        "now",
    ]


def test_seam_with_nothing_aligned_splits_at_the_middle() -> None:
    """Parts that heard the overlap differently keep their words each on its side of the middle."""
    earlier = [w("one", 8.5), w("won", 9.2), w("too", 10.5)]
    later = [w("want", 8.6), w("two", 10.4), w("three", 11.5)]
    assert sewn(earlier, later) == ["one", "won", "two", "three"]


def test_seam_punctuation_and_case_do_not_hide_a_word_heard_twice() -> None:
    """ "Dog." and "dog" at the same time are one word."""
    earlier = [w("Dog.", 9.0), w("Please", 10.5)]
    later = [w("dog", 9.1), w("please", 10.6)]
    assert sewn(earlier, later) == ["Dog.", "please"]


def test_seam_with_an_empty_part_keeps_the_other() -> None:
    """A part that heard nothing in the overlap leaves the other's words there whole."""
    words = [w("one", 8.5), w("two", 10.5), w("three", 11.5)]
    assert seam([], words, start=8, end=12) == ([], words)
    assert seam(words, [], start=8, end=12) == (words, [])
    before = [w("zero", 2)]
    assert seam(before, words, start=8, end=12) == (before, words)


def test_join_of_overlapping_parts_keeps_each_word_once_in_text_and_words() -> None:
    """Parts overlapping 4 s at a cut inside speech give one transcript without doubles."""
    first = JobPart(
        job_id="j",
        index=0,
        start=0,
        end=12,
        text="The lazy dog, please se",
        words=(w("The", 7), w("lazy", 7.6), w("dog,", 9.8), w("please", 10.6), w("se", 11.6)),
    )
    second = JobPart(
        job_id="j",
        index=1,
        start=8,
        end=20,
        text="zy dog, please send it.",
        words=(w("zy", 0.1), w("dog,", 1.9), w("please", 2.7), w("send", 3.5), w("it.", 4.2)),
    )
    text, words = join_parts([first, second])
    assert text == "The lazy dog, please send it."
    assert [(word.text, word.start) for word in words] == [
        ("The", 7),
        ("lazy", 7.6),
        ("dog,", 9.8),
        ("please", 10.7),
        ("send", 11.5),
        ("it.", 12.2),
    ]


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
