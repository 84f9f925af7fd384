"""The pure side of summaries (SPEC §27): lines, pieces under the limit, reading answers."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from transcriber_adapters.memory import MemoryLanguageModel
from transcriber_contracts.repository_support import make_job
from transcriber_core import subtitles, summaries
from transcriber_core.entities import Speaker, State, Word
from transcriber_core.errors import ModelAnswerMalformed, ModelUnavailable
from transcriber_core.summaries import Action, Line
from transcriber_core.summary_steps import ask, summarise

T0 = datetime(2026, 12, 5, 12, 0, tzinfo=UTC)


def _job(words: tuple[Word, ...], text: str, speakers: tuple[Speaker, ...] = ()) -> object:
    return make_job(
        created=T0, state=State.DONE, text=text, words=words, speakers=speakers, duration=10.0
    )


def _lines(count: int, words: int = 12) -> tuple[Line, ...]:
    return tuple(
        Line(
            number=n,
            start=float(n),
            end=n + 0.9,
            who="Диана" if n % 2 else "Omar",
            text=" ".join(f"слово{n}_{w}" for w in range(words)),
        )
        for n in range(1, count + 1)
    )


def test_lines_carry_times_and_shown_names() -> None:
    """Each line is one speaker's stretch, timed as the transcript's segments, with its name."""
    words = (
        Word(text="We", start=0.0, end=0.4, speaker="S1"),
        Word(text="ship.", start=0.4, end=1.0, speaker="S1"),
        Word(text="Good.", start=2.0, end=2.5, speaker="S2"),
    )
    named = (Speaker(id="S1", name="Diane"), Speaker(id="S2", name="S2"))
    job = _job(words, "We ship. Good.", named)
    lines = summaries.lines_of(job)  # type: ignore[arg-type]
    segments = subtitles.transcript(job).segments  # type: ignore[arg-type]
    assert [(line.who, line.text) for line in lines] == [("Diane", "We ship."), ("S2", "Good.")]
    assert [(line.start, line.end) for line in lines] == [(s.start, s.end) for s in segments]
    assert lines[0].render() == "[1] 00:00:00 Diane: We ship."


def test_an_untimed_transcript_is_one_line_without_a_speaker() -> None:
    """A transcript without words is one line from its start, no name."""
    lines = summaries.lines_of(_job((), "Just text here."))  # type: ignore[arg-type]
    assert [(line.who, line.text, line.start) for line in lines] == [(None, "Just text here.", 0.0)]


@pytest.mark.parametrize("text", ["a" * 999, "я" * 500, "日本語" * 100, "🙂" * 50])
def test_the_estimate_is_never_below_a_byte_level_tokenizer_s_count(text: str) -> None:
    """One token per three UTF-8 bytes: at least what a BPE tokenizer's merges leave."""
    # A byte-level BPE token covers at least one byte and rarely more than four of text
    # outside English; a count of bytes / 3 is above any such tokenizer's for these texts.
    assert summaries.estimate_tokens(text) * 3 >= len(text.encode())


@pytest.mark.parametrize("budget", [16, 50, 200, 1000])
def test_pieces_fit_the_budget_and_keep_every_word_in_order(budget: int) -> None:
    """Every piece is within the budget; together they hold the lines' text in order."""
    lines = (*_lines(40), Line(number=41, start=41.0, end=60.0, who="Omar", text="длинно " * 300))
    found = summaries.pieces(lines, budget=budget)
    for piece in found:
        assert sum(summaries.estimate_tokens(line.render()) + 1 for line in piece) <= budget
    # A word longer than a tiny budget's room is cut inside: compare the characters.
    kept = "".join(line.text for piece in found for line in piece)
    assert "".join(kept.split()) == "".join("".join(line.text for line in lines).split())


def test_a_summary_is_read_from_bare_fenced_or_wrapped_json() -> None:
    """Bare JSON, JSON in a code fence, and JSON amid words all read alike."""
    body = {
        "text": " Мы  выпускаем в пятницу. ",
        "points": ["релиз", 7, None, ""],
        "actions": [{"text": "отчёт", "who": "Диана"}, {"text": "зал", "who": "null"}, "call"],
    }
    raw = json.dumps(body, ensure_ascii=False)
    for answer in (raw, f"```json\n{raw}\n```", f"Here you go:\n{raw}\nHope it helps!"):
        built = summaries.parse_summary(answer)
        assert built.text == "Мы выпускаем в пятницу."
        assert built.points == ("релиз", "7")
        assert built.actions == (
            Action(text="отчёт", who="Диана"),
            Action(text="зал"),
            Action(text="call"),
        )


@pytest.mark.parametrize(
    "answer",
    [
        "no json at all",
        "[1, 2, 3]",
        '{"points": []}',
        '{"text": "", "points": []}',
        '{"text": "ok", "points": "not a list"}',
        '{"text": "ok", "actions": {"text": "x"}}',
        '{"text": "unterminated',
    ],
)
def test_a_malformed_summary_is_a_retryable_failure(answer: str) -> None:
    """An answer without the summary's shape is ``ModelAnswerMalformed``, a transient error."""
    with pytest.raises(ModelAnswerMalformed) as caught:
        summaries.parse_summary(answer)
    assert isinstance(caught.value, ModelUnavailable)


def test_an_answer_keeps_only_lines_that_were_sent() -> None:
    """Line numbers are read as models write them; numbers of no line sent are dropped."""
    answer = json.dumps({"answer": "Friday.", "lines": [3, "[5]", "7", 99, True, 3, "x"]})
    assert summaries.parse_answer(answer, known=[3, 5, 7]) == ("Friday.", (3, 5, 7))
    quotes = summaries.quotes_of([7, 3], _lines(8))
    assert [(q.start, q.end) for q in quotes] == [(3.0, 3.9), (7.0, 7.9)]


async def test_a_long_transcript_is_summarised_in_pieces_within_the_limit() -> None:
    """Over the limit: pieces, then combined in groups, and no request over the limit."""
    model = MemoryLanguageModel(max_input_tokens=1000)
    built = await summarise(model, _lines(300), language="ru")
    assert built.text
    sizes = [summaries.request_tokens(call) for call in model.calls]
    assert len(sizes) > 3
    assert max(sizes) <= 1000
    assert "language code: ru" in model.calls[0][0].content
    assert "combine" in model.calls[-1][0].content


async def test_a_question_over_pieces_cites_real_lines() -> None:
    """A question over a long transcript: per piece, then together; quotes are real lines."""
    model = MemoryLanguageModel(max_input_tokens=1000)
    words = tuple(
        Word(text=f"word{n}.", start=n * 1.0, end=n * 1.0 + 0.5, speaker=f"S{1 + n // 20 % 2}")
        for n in range(2000)
    )
    job = make_job(
        created=T0,
        state=State.DONE,
        text=" ".join(w.text for w in words),
        words=words,
        speakers=(Speaker(id="S1", name="Diane"), Speaker(id="S2", name="Omar")),
        duration=2000.0,
    )
    answer = await ask(model, job, "What was decided?")
    assert answer.answer
    assert answer.quotes
    by_start = {line.start: line for line in summaries.lines_of(job)}
    assert all(by_start[q.start].end == q.end for q in answer.quotes)
    assert len(model.calls) > 2
    assert max(summaries.request_tokens(call) for call in model.calls) <= 1000
