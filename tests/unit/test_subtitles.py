"""The pure subtitle rules (ADR 34): where cues break, what they hold, how they are written."""

from __future__ import annotations

import random
import string
from datetime import UTC, datetime

import attrs
import pytest

from tests.support.subtitles import parsed_srt, parsed_vtt
from transcriber_core.entities import Job, JobPart, Origin, State, Word
from transcriber_core.splitting import join_parts
from transcriber_core.subtitles import (
    MAX_CUE_SECONDS,
    MAX_LINE_CHARS,
    READING_CHARS_PER_SECOND,
    Cue,
    Segment,
    TimedWord,
    cues,
    ends_sentence,
    srt,
    transcript,
    webvtt,
    wrap,
)

T0 = datetime(2026, 12, 1, tzinfo=UTC)


def spoken(
    text: str, *, start: float = 0.0, step: float = 0.4, gaps: dict[int, float] | None = None
) -> list[Word]:
    """The words of ``text``, one every ``step`` seconds, each lasting most of its step.

    ``gaps`` adds silence before the word at that index.
    """
    words, at = [], start
    for index, token in enumerate(text.split()):
        at += (gaps or {}).get(index, 0.0)
        words.append(Word(text=token, start=at, end=at + step * 0.8))
        at += step
    return words


def texts(found: tuple[Cue, ...]) -> list[str]:
    """Each cue's text on one line."""
    return [cue.text for cue in found]


def assert_rules(found: tuple[Cue, ...]) -> None:
    """The limits hold on every cue: lines, width, length; no overlap, no running backwards."""
    previous_end = 0.0
    for cue in found:
        assert 1 <= len(cue.lines) <= 2, cue
        assert all(0 < len(line) <= MAX_LINE_CHARS for line in cue.lines), cue
        assert cue.start <= cue.end <= cue.start + MAX_CUE_SECONDS, cue
        assert cue.start >= previous_end, (previous_end, cue)
        previous_end = cue.end


def test_a_short_transcript_is_one_cue_from_its_first_word_to_its_last() -> None:
    """Words that fit one cue make one cue, timed from the first start to the last end."""
    words = spoken("Hello there, world.")
    [cue] = cues(words, text="Hello there, world.", duration=5.0)
    assert cue == Cue(start=0.0, end=words[-1].end, lines=("Hello there, world.",))


def test_a_cue_ends_at_the_latest_sentence_end_that_fits() -> None:
    """Of the places a cue could end, a sentence end wins over filling the lines."""
    text = "It rained. We stayed in. Then the sun came out over the hills and the valleys far away"
    found = cues(spoken(text), text=text, duration=60.0)
    assert texts(found)[0] == "It rained. We stayed in."
    assert_rules(found)


def test_a_pause_is_preferred_to_a_plain_word_boundary() -> None:
    """Without a sentence end in reach, the cue ends where the speaker paused."""
    text = "so we went down to the river and then we walked along the bank for a very long way home"
    words = spoken(text, gaps={7: 0.6})
    found = cues(words, text=text, duration=60.0)
    assert texts(found)[0] == "so we went down to the river"
    assert_rules(found)


def test_a_clause_mark_is_preferred_to_a_plain_word_boundary() -> None:
    """Without a sentence end or a pause, a comma is the better place to break."""
    text = "when the train came in, everybody on the platform stepped back from the edge and waited"
    found = cues(spoken(text), text=text, duration=60.0)
    assert texts(found)[0] == "when the train came in,"


def test_a_long_silence_always_ends_the_cue() -> None:
    """Two seconds of silence end a cue even when the next words would still fit in it."""
    words = spoken("yes indeed", gaps={1: 2.5})
    found = cues(words, text="yes indeed", duration=10.0)
    assert texts(found) == ["yes", "indeed"]
    assert found[0].end < words[1].start


def test_a_long_sentence_fills_two_balanced_lines_and_stays_within_seven_seconds() -> None:
    """A sentence longer than a cue is cut into cues of two lines at most, as even as can be."""
    text = " ".join(["word"] * 60)
    found = cues(spoken(text), text=text, duration=60.0)
    assert_rules(found)
    assert len(found[0].lines) == 2
    assert abs(len(found[0].lines[0]) - len(found[0].lines[1])) <= len("word ")
    assert " ".join(texts(found)) == text


def test_slow_speech_is_cut_by_the_seven_second_limit() -> None:
    """Words spoken slowly end a cue by its length before its lines are full."""
    text = "one two three four five six seven eight nine ten"
    found = cues(spoken(text, step=1.5), text=text, duration=20.0)
    assert_rules(found)
    assert len(found) == 3
    assert all(len(cue.text) < MAX_LINE_CHARS for cue in found)


def test_a_word_longer_than_a_line_is_cut_into_line_long_pieces() -> None:
    """A 100-character word is shown whole across lines and cues, its time shared by the pieces."""
    long_word = "x" * 100
    words = [Word(text="see", start=0.0, end=0.5), Word(text=long_word, start=0.5, end=5.5)]
    found = cues(words, text=f"see {long_word}", duration=6.0)
    assert_rules(found)
    assert "".join(line for cue in found for line in cue.lines) == "see" + long_word
    assert found[-1].end == pytest.approx(5.5)
    assert found[0].lines == ("see", "x" * MAX_LINE_CHARS)
    assert found[1].start == pytest.approx(0.5 + 5.0 * MAX_LINE_CHARS / 100)


def test_many_tiny_words_keep_every_word_in_order_within_the_limits() -> None:
    """Hundreds of one-letter words a few milliseconds apart still make cues that keep the rules."""
    words = [Word(text="a", start=index * 0.01, end=index * 0.01 + 0.005) for index in range(500)]
    found = cues(words, text=" ".join(["a"] * 500), duration=5.0)
    assert_rules(found)
    assert " ".join(texts(found)).split() == ["a"] * 500
    assert all(len(cue.lines) == 2 for cue in found[:-1])


def test_a_word_said_for_longer_than_seven_seconds_is_shown_for_seven() -> None:
    """One drawn-out word is one cue, cut at the longest a cue may last."""
    [cue] = cues([Word(text="ommm", start=1.0, end=11.0)], text="ommm", duration=12.0)
    assert (cue.start, cue.end) == (1.0, 1.0 + MAX_CUE_SECONDS)


def test_times_that_run_backwards_or_below_zero_are_made_safe() -> None:
    """Overlapping, out-of-order and negative word times give ordered cues that never overlap."""
    words = [
        Word(text="one.", start=-0.5, end=0.4),
        Word(text="two.", start=0.3, end=3.0),
        Word(text="three.", start=0.1, end=0.2),
        Word(text="four", start=2.0, end=2.5),
    ]
    found = cues(words, text="", duration=4.0)
    assert_rules(found)
    assert [(cue.start, cue.end, cue.text) for cue in found] == [
        (0.0, 3.0, "one. two. three. four")
    ]


def test_the_transcript_spelling_is_shown_when_it_lines_up_with_the_words() -> None:
    """Words without punctuation (SpeechKit's) show as the text spells them, so sentences break."""
    text = "Good morning. How are you today? Fine thanks, and you by the door, you look well"
    bare = [
        Word(text=w.text.strip(".?,").lower(), start=w.start, end=w.end)
        for w in spoken(text, step=0.6)
    ]
    found = cues(bare, text=text, duration=30.0)
    assert texts(found)[:2] == [
        "Good morning. How are you today?",
        "Fine thanks, and you by the door, you look well",
    ]


def test_the_words_are_shown_when_the_text_does_not_line_up() -> None:
    """A transcript with a different word count leaves the recognizer's own words on screen."""
    words = spoken("twenty five apples")
    [cue] = cues(words, text="25 apples", duration=3.0)
    assert cue.text == "twenty five apples"


def test_whitespace_inside_a_word_never_breaks_the_format() -> None:
    """A word holding newlines or tabs shows with single spaces: no blank line ends a cue early."""
    words = [Word(text="new\n\nline", start=0.0, end=0.5), Word(text="\tok ", start=0.6, end=0.9)]
    [cue] = cues(words, text="x", duration=1.0)
    assert cue.lines == ("new line ok",)


def test_split_job_words_shifted_by_their_part_make_one_run_of_cues() -> None:
    """Parts' words, shifted by each part's start as join_parts does, give cues across the cut."""
    first = JobPart(
        job_id="j",
        index=0,
        start=0.0,
        end=30.0,
        text="First part ends here.",
        words=tuple(spoken("First part ends here.", start=27.0)),
    )
    second = JobPart(
        job_id="j",
        index=1,
        start=30.0,
        end=60.0,
        text="Second part goes on.",
        words=tuple(spoken("Second part goes on.", start=0.2)),
    )
    text, words = join_parts([first, second])
    found = cues(words, text=text, duration=60.0)
    [cue] = found
    assert cue.text == "First part ends here. Second part goes on."
    assert (cue.start, cue.end) == (27.0, words[-1].end)
    assert words[4].start == pytest.approx(30.2)


def test_without_timings_one_cue_spans_the_whole_recording() -> None:
    """No word timings: one cue from 0 to the duration, all of the text, wrapped to the width."""
    text = (
        "A transcript from a recognizer that gives no timings at all, long enough for lines. " * 3
    )
    [cue] = cues((), text=text, duration=95.5)
    assert (cue.start, cue.end) == (0.0, 95.5)
    assert cue.text == " ".join(text.split())
    assert all(len(line) <= MAX_LINE_CHARS for line in cue.lines)
    assert len(cue.lines) > 2


@pytest.mark.parametrize("duration", [None, 0.0, float("nan")])
def test_without_timings_or_duration_the_cue_lasts_a_reading_time(duration: float | None) -> None:
    """Unmeasured recording: the one cue lasts as long as the text takes to read, at least 1 s."""
    text = "x" * 60
    [cue] = cues((), text=text, duration=duration)
    assert cue.end == pytest.approx(60 / READING_CHARS_PER_SECOND)
    [short] = cues((), text="hi", duration=duration)
    assert short.end == 1.0


def test_an_empty_transcript_has_no_cues() -> None:
    """Nothing said, nothing shown: no cue, an SRT of nothing, a WebVTT of its header alone."""
    assert cues((), text="  ", duration=3.0) == ()
    assert srt(()) == ""
    assert webvtt(()) == "WEBVTT\n\n"


def test_srt_is_numbered_cues_with_comma_milliseconds() -> None:
    """SubRip: index, ``HH:MM:SS,mmm --> HH:MM:SS,mmm``, the lines, a blank line."""
    found = (
        Cue(start=0.0, end=1.5, lines=("one",)),
        Cue(start=3661.0004, end=3662.9996, lines=("two", "lines")),
    )
    assert srt(found) == (
        "1\n00:00:00,000 --> 00:00:01,500\none\n\n2\n01:01:01,000 --> 01:01:03,000\ntwo\nlines\n\n"
    )


def test_webvtt_escapes_markup_so_text_is_shown_as_said() -> None:
    """``<``, ``>`` and ``&`` are escaped: no tag is injected, ``-->`` cannot end a timing line."""
    found = (Cue(start=0.0, end=2.0, lines=("<b>a</b> & b --> c",)),)
    assert webvtt(found) == (
        "WEBVTT\n\n00:00:00.000 --> 00:00:02.000\n&lt;b&gt;a&lt;/b&gt; &amp; b --&gt; c\n\n"
    )
    [(_, _, lines)] = parsed_vtt(webvtt(found))
    assert lines == ["<b>a</b> & b --> c"]


def test_the_last_cue_never_ends_after_the_recording() -> None:
    """A last word timed past the end, and the one-second minimum, both stop at the duration."""
    words = [*spoken("One two three."), Word(text="four.", start=8.2, end=9.181)]
    found = cues(words, text="", duration=8.6)
    assert found[-1].end == 8.6
    assert found[-1].start == 8.2
    short = cues([Word(text="Hi.", start=8.3, end=8.4)], text="", duration=8.6)
    assert [(cue.start, cue.end) for cue in short] == [(8.3, 8.6)]


def test_a_word_timed_after_the_recording_is_shown_in_its_last_millisecond() -> None:
    """Times past the duration (a recognizer's rounding) are pulled back into it; none runs on."""
    found = cues([Word(text="late.", start=9.0, end=9.5)], text="", duration=8.6)
    assert [(cue.start, cue.end, cue.text) for cue in found] == [(8.599, 8.6, "late.")]


def test_random_transcripts_parse_back_with_real_parsers_and_keep_the_rules() -> None:
    """Random transcripts: ``srt`` and ``webvtt-py`` read the cues back; they keep every rule."""
    rng = random.Random(34)
    alphabet = string.ascii_lowercase + "".join(map(chr, range(0x436, 0x440)))  # and Cyrillic
    for _ in range(200):
        words, at = [], rng.uniform(0, 3)
        for _ in range(rng.randint(1, 120)):
            length = rng.choice([1, 2, 3, 5, 8, 12, 50, 90])
            token = "".join(rng.choice(alphabet) for _ in range(length)) + rng.choice(
                ["", "", ".", ",", "?"]
            )
            at += rng.choice([0.0, 0.01, 0.1, 0.3, 0.6, 2.5])
            spoken_for = rng.choice([0.0, 0.05, 0.3, 1.0, 9.0])
            words.append(Word(text=token, start=at, end=at + spoken_for))
            at += spoken_for
        # The recording ends soon after its last word: the one-second minimum must not outlast it.
        duration = at + rng.choice([0.2, 0.5])
        found = cues(words, text="", duration=duration)
        assert_rules(found)
        assert all(cue.end <= round(duration, 3) for cue in found)  # times are whole ms
        assert "".join(line for cue in found for line in cue.lines).replace(" ", "") == "".join(
            word.text for word in words
        )
        from_srt = parsed_srt(srt(found))
        from_vtt = parsed_vtt(webvtt(found))
        assert [lines for _, _, lines in from_srt] == [list(cue.lines) for cue in found]
        assert [lines for _, _, lines in from_vtt] == [list(cue.lines) for cue in found]


def test_wrap_fills_lines_and_cuts_only_words_longer_than_a_line() -> None:
    """Greedy lines of at most 42 characters; a word is cut only when no line could hold it."""
    assert wrap("a " * 30) == (" ".join(["a"] * 21), " ".join(["a"] * 9))
    assert wrap("y" * 50) == ("y" * 42, "y" * 8)


def test_sentence_ends_look_through_closing_quotes() -> None:
    """``done."`` and ``вот!»`` end sentences; ``Mr`` and ``and,`` do not."""
    assert all(map(ends_sentence, ['done."', "вот!»", "so…"]))
    assert not any(map(ends_sentence, ["Mr", "and,"]))


def test_the_json_document_has_the_words_and_the_cues_as_segments() -> None:
    """SPEC §15: job id, text, duration, words as ``word/start/end``, segments as the cues."""
    words = (Word(text="Hi.", start=0.5, end=0.9), Word(text="Bye.", start=4.0, end=4.4))
    job = Job(
        id="job-1",
        state=State.DONE,
        origin=Origin.http(),
        text="Hi. Bye.",
        words=words,
        duration=5.0,
        created=T0,
        updated=T0,
    )
    document = transcript(job)
    assert document.job_id == "job-1"
    assert document.text == "Hi. Bye."
    assert document.duration == 5.0
    assert document.words == (
        TimedWord(word="Hi.", start=0.5, end=0.9),
        TimedWord(word="Bye.", start=4.0, end=4.4),
    )
    assert document.segments == (
        Segment(start=0.5, end=1.5, text="Hi."),
        Segment(start=4.0, end=5.0, text="Bye."),
    )
    untimed = transcript(attrs.evolve(job, words=(), duration=None))
    assert untimed.duration is None
    assert untimed.segments == (Segment(start=0.0, end=1.0, text="Hi. Bye."),)


def test_words_without_finite_times_are_left_out_of_cues_and_json() -> None:
    """A NaN or infinite time (JSON cannot carry it) drops that word; the others stay."""
    words = (
        Word(text="kept", start=0.0, end=0.5),
        Word(text="lost", start=float("nan"), end=1.0),
        Word(text="gone", start=1.0, end=float("inf")),
    )
    job = Job(
        id="j",
        state=State.DONE,
        origin=Origin.http(),
        text="a b",
        words=words,
        created=T0,
        updated=T0,
    )
    document = transcript(job)
    assert [word.word for word in document.words] == ["kept"]
    assert [segment.text for segment in document.segments] == ["kept"]
