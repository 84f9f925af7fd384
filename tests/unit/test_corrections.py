"""The rule of a person's correction of a transcript (ADR 57): new words keep the old timings."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.unit.test_alignment import LINES_PER_STEP, lines_counted
from transcriber_core.corrections import (
    GROWTH_CHARS,
    GROWTH_WORDS,
    MAX_ALIGNMENT_STEPS,
    MAX_CHARS,
    MAX_STRETCH_WORDS,
    MAX_TEXT_CHARS,
    MAX_WORDS,
    BadCorrection,
    CorrectionTooBig,
    ceiling,
    correction_of,
    normalised,
    realign,
    restoration_of,
    shown_tokens,
)
from transcriber_core.entities import Correction, Job, Origin, State, Word

T0 = datetime(2026, 12, 2, tzinfo=UTC)


def done(words: tuple[Word, ...], text: str | None = None) -> Job:
    """A done job with ``words`` and their texts as its text unless given."""
    return Job(
        id="j1",
        state=State.DONE,
        origin=Origin.http(),
        text=" ".join(w.text for w in words) if text is None else text,
        words=words,
        created=T0,
        updated=T0,
    )


def saved(job: Job, correction: Correction) -> Job:
    """``job`` as the store leaves it after saving ``correction``."""
    return attrs.evolve(
        job,
        text=correction.text,
        words=correction.words,
        original_text=correction.original_text,
        original_words=correction.original_words,
    )


def timed(*texts: str, speaker: str | None = None) -> tuple[Word, ...]:
    """Words one second each with a half-second pause between them."""
    return tuple(
        Word(text=t, start=i * 1.5, end=i * 1.5 + 1.0, speaker=speaker) for i, t in enumerate(texts)
    )


def test_one_word_replaced_keeps_its_timing_and_the_others_stay_exact() -> None:
    """Correcting one word gives it the old word's span; every other word is unchanged."""
    words = timed("the", "quick", "brown", "fox")
    fixed = correction_of(done(words), 0, 4, "the quick crown fox")
    assert [w.text for w in fixed.words] == ["the", "quick", "crown", "fox"]
    assert fixed.words[2] == attrs.evolve(words[2], text="crown")
    assert fixed.words[:2] == words[:2]
    assert fixed.words[3] == words[3]
    assert fixed.text == "the quick crown fox"


def test_first_correction_keeps_the_original_and_later_ones_keep_it_too() -> None:
    """The original is the recognizer's at the first correction and stays so at the next."""
    words = timed("a", "b")
    job = done(words)
    first = correction_of(job, 0, 2, "a c")
    assert (first.original_text, first.original_words) == ("a b", words)
    again = saved(job, first)
    second = correction_of(again, 0, 2, "a d")
    assert (second.original_text, second.original_words) == ("a b", words)
    back = restoration_of(attrs.evolve(again, text=second.text, words=second.words))
    assert (back.text, back.words, back.original_text, back.original_words) == (
        "a b",
        words,
        None,
        None,
    )


def test_restore_of_a_job_never_corrected_is_refused() -> None:
    """Nothing to undo is ``not_corrected``."""
    with pytest.raises(BadCorrection) as refused:
        restoration_of(done(timed("a")))
    assert refused.value.code == "not_corrected"


def test_one_word_split_in_two_shares_its_span_by_length() -> None:
    """``n→m``: the old span is divided among the new words by their lengths."""
    words = (Word(text="cannot", start=2.0, end=3.0, speaker="S1"),)
    fixed = realign(words, ["cannot"], ["can", "not"])
    assert [(w.text, w.start, w.end, w.speaker) for w in fixed] == [
        ("can", 2.0, 2.5, "S1"),
        ("not", 2.5, 3.0, "S1"),
    ]


def test_inserted_word_takes_the_gap_between_its_neighbours() -> None:
    """A word added between two words lives in the pause between them."""
    words = timed("hello", "world")  # 0-1, 1.5-2.5
    fixed = realign(words, ["hello", "world"], ["hello", "big", "world"])
    assert fixed[0] == words[0]
    assert fixed[2] == words[1]
    assert (fixed[1].start, fixed[1].end) == (1.0, 1.5)


def test_inserted_word_without_a_gap_is_zero_length_at_the_next_start() -> None:
    """Touching neighbours leave no room: the new word is zero-length where the next begins."""
    words = (Word(text="a", start=0.0, end=1.0), Word(text="c", start=1.0, end=2.0))
    fixed = realign(words, ["a", "c"], ["a", "b", "c"])
    assert (fixed[1].start, fixed[1].end) == (1.0, 1.0)


def test_word_added_at_the_end_of_the_recording_is_zero_length_at_the_last_end() -> None:
    """After the last word there is no neighbour: zero-length at the last word's end."""
    fixed = realign(timed("a"), ["a"], ["a", "b"])
    assert (fixed[1].start, fixed[1].end) == (1.0, 1.0)


def test_empty_correction_deletes_the_stretch_and_its_tokens() -> None:
    """An empty text removes the stretch's words from the words and the text."""
    words = timed("one", "two", "three", "four")
    fixed = correction_of(done(words), 1, 3, "  ")
    assert fixed.words == (words[0], words[3])
    assert fixed.text == "one four"


def test_punctuated_text_keeps_its_punctuation_outside_the_stretch() -> None:
    """Where the text's tokens line up with the words, only the stretch's tokens change."""
    words = timed("hello", "there", "general", "kenobi")
    job = done(words, text="Hello there. General Kenobi!")
    assert shown_tokens(job) == ["Hello", "there.", "General", "Kenobi!"]
    fixed = correction_of(job, 2, 4, "General Grievous!")
    assert fixed.text == "Hello there. General Grievous!"
    assert fixed.words[2] == words[2]  # shown and typed alike: the word is left as it was
    assert fixed.words[3].text == "Grievous!"
    assert fixed.words[3].start == words[3].start


def test_only_case_or_punctuation_changed_keeps_the_timing_and_takes_the_spelling() -> None:
    """A token equal once normalised keeps its word's timing exactly, with the new spelling."""
    words = timed("paris")
    fixed = realign(words, ["paris"], ["Paris."])
    assert fixed == (attrs.evolve(words[0], text="Paris."),)
    assert normalised("Paris.") == normalised("paris")


def test_text_not_lined_up_with_the_words_is_rebuilt_from_them() -> None:
    """When the text's tokens do not match the words one to one, the text is the words joined."""
    words = timed("a", "b", "c")
    fixed = correction_of(done(words, text="a b c d e"), 0, 1, "x")
    assert fixed.text == "x b c"


def test_speaker_labels_stay_with_the_stretch() -> None:
    """New and kept words of a turn keep its speaker."""
    words = timed("one", "two", speaker="S2")
    fixed = correction_of(done(words), 0, 2, "one and two")
    assert {w.speaker for w in fixed.words} == {"S2"}


@pytest.mark.parametrize(("start", "end"), [(-1, 1), (0, 0), (1, 1), (2, 1), (0, 4), (3, 4)])
def test_a_range_outside_the_words_is_bad_range(start: int, end: int) -> None:
    """An empty, reversed or out-of-bounds range is refused as ``bad_range``."""
    with pytest.raises(BadCorrection) as refused:
        correction_of(done(timed("a", "b", "c")), start, end, "x")
    assert refused.value.code == "bad_range"


def test_too_long_text_and_control_characters_and_undone_jobs_are_refused() -> None:
    """Each refusal has its own stable code."""
    job = done(timed("a"))
    cases = [
        (job, "x" * (MAX_TEXT_CHARS + 1), "text_too_long"),
        (job, "a\x00b", "bad_text"),
        (attrs.evolve(job, state=State.CHECK), "x", "not_done"),
        (attrs.evolve(job, words=()), "x", "no_words"),
    ]
    for case, text, code in cases:
        with pytest.raises(BadCorrection) as refused:
            correction_of(case, 0, 1, text)
        assert refused.value.code == code
    many = done(timed(*["w"] * (MAX_STRETCH_WORDS + 1)))
    with pytest.raises(BadCorrection) as refused:
        correction_of(many, 0, MAX_STRETCH_WORDS + 1, "x")
    assert refused.value.code == "bad_range"


def test_the_red_teams_pattern_is_corrected_in_bounded_work() -> None:
    """1,000 words of one token retyped as two alternating: a bounded count of Python lines run.

    Counted by a tracer over every module, so it holds whatever aligns the
    words (difflib took some 10^9 lines here, SPEC §29).
    """
    job = done(timed(*["a"] * 1_000))
    allowance = LINES_PER_STEP * MAX_ALIGNMENT_STEPS
    with lines_counted(allowance) as lines:
        fixed = correction_of(job, 0, 1_000, " ".join(["a", "b"] * 500))
    assert lines[0] <= allowance
    assert [w.text for w in fixed.words] == ["a", "b"] * 500
    kept = [w for w in fixed.words if w.text == "a"]
    assert all(w in job.words for w in kept)  # the a's kept their own timings


def test_a_correction_past_the_budget_is_refused_as_too_complex() -> None:
    """Past the alignment's budget: ``correction_too_complex`` (HTTP 422), not waited for."""
    job = done(timed(*["a"] * 400))
    with pytest.raises(CorrectionTooBig) as refused:
        correction_of(job, 0, 400, " ".join(["a", "b"] * 200), budget=1_000)
    assert refused.value.code == "correction_too_complex"
    assert correction_of(job, 0, 400, " ".join(["a", "b"] * 200)).words[0] == job.words[0]


def test_the_ceiling_is_twice_or_a_margin_more_and_never_past_the_largest() -> None:
    """Small transcripts get the margin, large ones twice, the largest no more, bigger ones stay."""
    assert ceiling(10, extra=1_000, largest=100_000) == 1_010
    assert ceiling(5_000, extra=1_000, largest=100_000) == 10_000
    assert ceiling(80_000, extra=1_000, largest=100_000) == 100_000
    assert ceiling(120_000, extra=1_000, largest=100_000) == 120_000


def test_a_transcript_grows_by_corrections_only_to_its_ceiling() -> None:
    """Words past the ceiling are ``transcript_too_long``, counted from the recognizer's."""
    job = done(timed("a", "b", "c"))
    grown = correction_of(job, 0, 3, " ".join(["w"] * (GROWTH_WORDS + 3)))
    again = saved(job, grown)
    # Corrected once already, the ceiling is still the recognizer's 3 words' (3 + 1,000).
    with pytest.raises(CorrectionTooBig) as refused:
        correction_of(again, 0, 1, "w w")
    assert refused.value.code == "transcript_too_long"
    assert "1003 words" in refused.value.message
    assert len(correction_of(again, 0, 2, "w").words) == GROWTH_WORDS + 2  # shrinking is fine


def test_characters_have_a_ceiling_too() -> None:
    """Long words grow the text past its ceiling of characters: ``transcript_too_long``."""
    job = done(timed("a", "b"))  # "a b": 3 characters recognised
    assert len(correction_of(job, 0, 1, "x" * (GROWTH_CHARS + 1)).text) == GROWTH_CHARS + 3
    with pytest.raises(CorrectionTooBig) as refused:
        correction_of(job, 0, 1, "x" * (GROWTH_CHARS + 2))
    assert refused.value.code == "transcript_too_long"
    assert "10003 characters" in refused.value.message


def test_a_transcript_already_past_its_ceiling_may_shrink_but_not_grow() -> None:
    """One made before the ceiling (300,000 words) is trimmed; it cannot grow any more."""
    recognised = timed("a", "b")
    huge = attrs.evolve(
        done(timed(*["w"] * 2_000)),
        original_text="a b",
        original_words=recognised,
    )
    assert len(correction_of(huge, 0, 1_000, "w").words) == 1_001
    with pytest.raises(CorrectionTooBig):
        correction_of(huge, 0, 1, "w w")


def test_the_absolute_ceilings_are_above_eight_hours_of_speech() -> None:
    """Eight hours at 200 words a minute (96,000 words, some 600,000 characters) fit."""
    assert MAX_WORDS >= 8 * 60 * 200
    assert MAX_CHARS >= 8 * 60 * 200 * 6


# -- properties -------------------------------------------------------------------------------

_VOCAB = st.sampled_from(["the", "a", "cat", "sat", "on", "mat", "Cat,", "hat.", "x", "mat!"])


@st.composite
def _timeline(draw: st.DrawFn, *, overlap: bool) -> tuple[Word, ...]:
    """Words in time order; without ``overlap`` none overlaps the next."""
    texts = draw(st.lists(_VOCAB, min_size=1, max_size=12))
    at = draw(st.floats(0, 100))
    words = []
    for text in texts:
        length = draw(st.floats(0, 3))
        words.append(
            Word(text=text, start=at, end=at + length, speaker=draw(st.sampled_from(["S1", "S2"])))
        )
        step = draw(st.floats(0, 2))
        at = at + step if overlap else at + length + step
    return tuple(words)


@st.composite
def _edit(draw: st.DrawFn, *, overlap: bool) -> tuple[tuple[Word, ...], int, int, str]:
    words = draw(_timeline(overlap=overlap))
    start = draw(st.integers(0, len(words) - 1))
    end = draw(st.integers(start + 1, len(words)))
    old = [w.text for w in words[start:end]]
    # The new text: the old one with some words dropped, changed or added.
    new = [t for t in old if draw(st.booleans()) or draw(st.booleans())]
    for _ in range(draw(st.integers(0, 3))):
        new.insert(draw(st.integers(0, len(new))), draw(_VOCAB))
    return words, start, end, " ".join(new)


@settings(max_examples=300, deadline=None)
@given(_edit(overlap=False))
def test_words_that_never_overlap_stay_in_order_and_never_overlap(
    edit: tuple[tuple[Word, ...], int, int, str],
) -> None:
    """Non-overlapping words in order stay so: each starts after the last ends, none ends early."""
    words, start, end, text = edit
    fixed = correction_of(done(words), start, end, text).words
    for word in fixed:
        assert word.start <= word.end
    for first, second in itertools.pairwise(fixed):
        assert first.end <= second.start
    assert len(fixed) == len(words) - (end - start) + len(text.split())


@settings(max_examples=300, deadline=None)
@given(_edit(overlap=True))
def test_starts_never_go_back_even_when_words_overlap(
    edit: tuple[tuple[Word, ...], int, int, str],
) -> None:
    """With overlapping words, starts stay non-decreasing and no word ends before it starts."""
    words, start, end, text = edit
    fixed = correction_of(done(words), start, end, text).words
    for word in fixed:
        assert word.start <= word.end
    for first, second in itertools.pairwise(fixed):
        assert first.start <= second.start


@settings(max_examples=300, deadline=None)
@given(_edit(overlap=False))
def test_words_outside_the_stretch_and_unchanged_words_keep_exact_timings(
    edit: tuple[tuple[Word, ...], int, int, str],
) -> None:
    """Outside the stretch nothing moves; the new text's words match the typed tokens."""
    words, start, end, text = edit
    fixed = correction_of(done(words), start, end, text).words
    tail = len(words) - end
    assert fixed[:start] == words[:start]
    assert fixed[len(fixed) - tail :] == words[end:]
    assert [w.text for w in fixed[start : len(fixed) - tail]] == text.split()
    stretch = {(w.text, w.start, w.end) for w in words[start:end]}
    kept = [w for w in fixed[start : len(fixed) - tail] if (w.text, w.start, w.end) in stretch]
    if text.split() == [w.text for w in words[start:end]]:
        assert len(kept) == end - start  # the same text: every word exactly as it was


@settings(max_examples=200, deadline=None)
@given(_edit(overlap=False))
def test_the_same_text_again_changes_nothing(edit: tuple[tuple[Word, ...], int, int, str]) -> None:
    """Saving a stretch's text as it is shown gives back the very same words and text."""
    words, start, end, _ = edit
    job = done(words)
    same = " ".join(shown_tokens(job)[start:end])
    fixed = correction_of(job, start, end, same)
    assert fixed.words == words
    assert fixed.text == job.text
