"""Summaries and questions of a transcript, through a language model (SPEC §27, ADR 82, 83).

Pure: what the model is sent (the prompts, in one place, versioned by
``PROMPT_VERSION``), how a long transcript is cut into pieces that each fit
``max_input_tokens``, and how the model's answers are read. The model's
input is the transcript as people see it: the corrected text, each line
with its time and its speaker's shown name (a voice's name once matched).
What calls the model, leases and saves is ``summary_steps``.
"""

from __future__ import annotations

import enum
import hashlib
import json
import math
import re
from collections.abc import Sequence
from datetime import datetime
from typing import Any

import attrs

from transcriber_core import subtitles
from transcriber_core.entities import Job
from transcriber_core.errors import ModelAnswerMalformed

#: Stored with each summary: which prompts made it. Raise it whenever a prompt below changes.
PROMPT_VERSION = 1
#: A line of the model's input joins one speaker's cues up to about this many characters.
LINE_CHARS = 400
#: Tokens an answer may take, kept free of every request's input (the limit is the input's).
ANSWER_TOKENS = 1024
#: What one chat message costs beyond its content (role, separators), in any tokenizer we know.
MESSAGE_OVERHEAD_TOKENS = 8
#: The most key points and action items kept from an answer.
MAX_POINTS = 20
MAX_ACTIONS = 20
#: The most quotes an answer to a question keeps.
MAX_QUOTES = 10
#: The longest question taken, in characters.
MAX_QUESTION_CHARS = 1000


class SummaryState(enum.StrEnum):
    """Where a summary is: asked for (or being built), built, or given up on."""

    PENDING = "pending"
    DONE = "done"
    FAILED = "failed"


@attrs.frozen(kw_only=True)
class Message:
    """One chat message sent to the model."""

    #: ``system``, ``user`` or ``assistant``.
    role: str
    #: May carry the transcript: never logged.
    content: str = attrs.field(repr=False)


@attrs.frozen(kw_only=True)
class Completion:
    """The model's answer to one request, and what it cost."""

    #: The answer's text; may quote the transcript: never logged.
    text: str = attrs.field(repr=False)
    tokens_in: int
    tokens_out: int


@attrs.frozen(kw_only=True)
class Action:
    """An action item: what is to be done, and who said they would (or was asked to)."""

    text: str
    #: A speaker's shown name, or None when nobody in particular.
    who: str | None = None


@attrs.frozen(kw_only=True)
class Built:
    """What the model made of a transcript: a paragraph, key points, action items."""

    text: str
    points: tuple[str, ...] = ()
    actions: tuple[Action, ...] = ()


@attrs.frozen(kw_only=True)
class Summary:
    """A recording's summary as a unit of work (ADR 83): one per job, leased like a part."""

    job_id: str
    state: SummaryState = SummaryState.PENDING
    #: The paragraph, key points and action items once built; never logged.
    text: str | None = attrs.field(default=None, repr=False)
    points: tuple[str, ...] = attrs.field(default=(), repr=False)
    actions: tuple[Action, ...] = attrs.field(default=(), repr=False)
    #: The model that built it, as ``[llm] model`` names it.
    model: str | None = None
    #: ``PROMPT_VERSION`` of the prompts that built it.
    prompt_version: int = PROMPT_VERSION
    #: ``source_digest`` of the transcript it was built from: another digest now means stale.
    source: str | None = None
    #: Why it failed, or why its last attempt did not finish, in our own words.
    error: str | None = None
    #: Acquires since it was last asked for.
    attempts: int = 0
    #: The lease holder; None when nobody builds it now.
    acquisition_id: str | None = None
    #: When the lease was taken or last renewed (the store's clock).
    acquire_time: datetime | None = None
    #: Not handed out before this time (a retry's pause).
    delay_time: datetime | None = None
    #: When it was last asked for (the store's clock): queue order.
    requested: datetime
    #: When it was built; None until done.
    created: datetime | None = None


@attrs.frozen(kw_only=True)
class Line:
    """One numbered line of the model's input: a stretch of one speaker's speech."""

    number: int
    start: float
    end: float
    #: The speaker's shown name; None when speakers were not labelled.
    who: str | None
    text: str

    def render(self) -> str:
        """``[n] HH:MM:SS Name: text`` as the model reads it."""
        who = f" {self.who}:" if self.who else ""
        return f"[{self.number}] {_clock(self.start)}{who} {self.text}"


@attrs.frozen(kw_only=True)
class Quote:
    """A moment an answer rests on: a transcript line's real times and words."""

    start: float
    end: float
    text: str


@attrs.frozen(kw_only=True)
class Answer:
    """The answer to a question about a transcript, with the moments it rests on."""

    answer: str
    quotes: tuple[Quote, ...] = ()


def lines_of(job: Job) -> tuple[Line, ...]:
    """The transcript of ``job`` as numbered lines with times and speakers' shown names.

    Consecutive cues of one speaker join up to ``LINE_CHARS``: fewer
    numbers and times for the model to read, and a quote is a whole
    stretch of speech.
    """
    # As ``speakers.names``, which cannot be imported here: speakers needs the ports, which
    # need this module.
    shown = {speaker.id: speaker.name for speaker in job.speakers}
    cues = subtitles.cues(job.words, text=job.text or "", duration=job.duration)
    joined: list[tuple[float, float, str | None, str]] = []
    for cue in cues:
        text = cue.text.strip()
        if not text:
            continue
        if joined and joined[-1][2] == cue.speaker and len(joined[-1][3]) + len(text) < LINE_CHARS:
            start, _, speaker, said = joined[-1]
            joined[-1] = (start, cue.end, speaker, f"{said} {text}")
        else:
            joined.append((cue.start, cue.end, cue.speaker, text))
    return tuple(
        Line(
            number=index,
            start=start,
            end=end,
            who=None if speaker is None else shown.get(speaker) or speaker,
            text=text,
        )
        for index, (start, end, speaker, text) in enumerate(joined, start=1)
    )


def source_digest(lines: Sequence[Line]) -> str:
    """A digest of what the model reads of a transcript: a summary of another digest is stale."""
    return hashlib.sha256("\n".join(line.render() for line in lines).encode()).hexdigest()


def estimate_tokens(text: str) -> int:
    """A token count no tokenizer we know exceeds: one per three UTF-8 bytes, rounded up.

    BPE tokenizers take three to four bytes of English and about two to
    four of Cyrillic (two bytes a letter) per token; counting three bytes a
    token overestimates both, so a request measured here fits the server.
    """
    return math.ceil(len(text.encode()) / 3)


def request_tokens(messages: Sequence[Message]) -> int:
    """``estimate_tokens`` of a whole request, with each message's overhead."""
    return sum(estimate_tokens(m.content) + MESSAGE_OVERHEAD_TOKENS for m in messages)


def pieces(lines: Sequence[Line], *, budget: int) -> list[tuple[Line, ...]]:
    """``lines`` cut into consecutive pieces of at most ``budget`` tokens each.

    A line longer than the whole budget is cut at spaces (or anywhere)
    into lines of the same number and times, so every piece fits.
    """
    if budget < 16:
        raise ValueError("a piece needs room for at least one short line")
    found: list[tuple[Line, ...]] = []
    current: list[Line] = []
    used = 0
    for whole in lines:
        for line in _fitting(whole, budget):
            cost = estimate_tokens(line.render()) + 1
            if current and used + cost > budget:
                found.append(tuple(current))
                current, used = [], 0
            current.append(line)
            used += cost
    if current:
        found.append(tuple(current))
    return found


def _fitting(line: Line, budget: int) -> list[Line]:
    """``line`` as one or more lines of at most ``budget`` tokens each."""
    if estimate_tokens(line.render()) + 1 <= budget:
        return [line]
    head = estimate_tokens(attrs.evolve(line, text="").render()) + 2
    room = max((budget - head) * 3 // 4, 1)  # characters: up to four bytes a character
    text = line.text
    found = []
    while text:
        cut = len(text) if len(text) <= room else text.rfind(" ", 0, room)
        if cut <= 0:
            cut = room
        found.append(attrs.evolve(line, text=text[:cut].strip() or text[:cut]))
        text = text[cut:].strip()
    return found


#: A piece's answer: its text and the line numbers it rests on.
PieceAnswer = tuple[str, tuple[int, ...]]


# The prompts: every word the model is sent besides the transcript and the question.

_SUMMARY_SYSTEM = (
    "You summarise transcripts of recorded speech. Each transcript line is"
    " '[number] HH:MM:SS Speaker: words'. Use only what the transcript says; invent nothing."
    " Write in the language the transcript is spoken in{language}."
    " Answer with one JSON object and nothing else:"
    ' {{"text": "a short paragraph", "points": ["key point", ...],'
    ' "actions": [{{"text": "what is to be done", "who": "the speaker who will do it or null"}}]}}.'
    " Points: at most {points}; actions: only what someone agreed or was asked to do,"
    " at most {actions}; an empty list when there are none."
)
_COMBINE_SYSTEM = (
    "You combine the summaries of consecutive pieces of one transcript into one summary of"
    " the whole. Use only what they say. Write in the language they are written in{language}."
    " Answer with one JSON object and nothing else:"
    ' {{"text": "a short paragraph", "points": ["key point", ...],'
    ' "actions": [{{"text": "what is to be done", "who": "who or null"}}]}};'
    " at most {points} points and {actions} actions, without repeating one."
)
_ASK_SYSTEM = (
    "You answer a question about a transcript of recorded speech, from the transcript only."
    " Each line is '[number] HH:MM:SS Speaker: words'. If the transcript does not say, answer"
    " that it does not. Answer in the language of the question."
    ' Answer with one JSON object and nothing else: {"answer": "your answer",'
    ' "lines": [the numbers of the lines the answer rests on]}.'
)
_ASK_COMBINE_SYSTEM = (
    "You answer a question from partial answers, each found in one piece of a long transcript."
    " Use only what they say. Answer in the language of the question."
    ' Answer with one JSON object and nothing else: {"answer": "your answer",'
    ' "lines": [the line numbers of the partial answers yours rests on]}.'
)


def _language_hint(language: str | None) -> str:
    return f" (language code: {language})" if language else ""


def summary_messages(piece: Sequence[Line], *, language: str | None) -> list[Message]:
    """The request that summarises one piece (or the whole) of a transcript."""
    system = _SUMMARY_SYSTEM.format(
        language=_language_hint(language), points=MAX_POINTS, actions=MAX_ACTIONS
    )
    transcript = "\n".join(line.render() for line in piece)
    return [
        Message(role="system", content=system),
        Message(role="user", content=f"Transcript:\n{transcript}"),
    ]


def combine_messages(partials: Sequence[Built], *, language: str | None) -> list[Message]:
    """The request that makes one summary of the pieces' summaries, in their order."""
    system = _COMBINE_SYSTEM.format(
        language=_language_hint(language), points=MAX_POINTS, actions=MAX_ACTIONS
    )
    body = "\n\n".join(
        f"Piece {index}:\n{_built_json(built)}" for index, built in enumerate(partials, start=1)
    )
    return [Message(role="system", content=system), Message(role="user", content=body)]


def ask_messages(piece: Sequence[Line], question: str) -> list[Message]:
    """The request that answers ``question`` from one piece (or the whole) of a transcript."""
    transcript = "\n".join(line.render() for line in piece)
    return [
        Message(role="system", content=_ASK_SYSTEM),
        Message(role="user", content=f"Transcript:\n{transcript}\n\nQuestion: {question}"),
    ]


def ask_combine_messages(partials: Sequence[PieceAnswer], question: str) -> list[Message]:
    """The request that answers ``question`` from the pieces' answers."""
    body = "\n\n".join(
        f"Partial answer {index} (lines {list(numbers)}): {answer}"
        for index, (answer, numbers) in enumerate(partials, start=1)
    )
    return [
        Message(role="system", content=_ASK_COMBINE_SYSTEM),
        Message(role="user", content=f"{body}\n\nQuestion: {question}"),
    ]


def _built_json(built: Built) -> str:
    return json.dumps(
        {
            "text": built.text,
            "points": list(built.points),
            "actions": [{"text": a.text, "who": a.who} for a in built.actions],
        },
        ensure_ascii=False,
    )


# Reading the answers: strict JSON first, then what models wrap it in.

_FENCE = re.compile(r"```(?:json|JSON)?\s*(.*?)```", re.DOTALL)


def _json_object(text: str) -> dict[str, Any]:
    """The one JSON object in ``text``: bare, inside a code fence, or amid other words."""
    candidates = [text.strip()]
    candidates += [m.group(1).strip() for m in _FENCE.finditer(text)]
    first, last = text.find("{"), text.rfind("}")
    if 0 <= first < last:
        candidates.append(text[first : last + 1])
    for candidate in candidates:
        try:
            found = json.loads(candidate)
        except ValueError:
            continue
        if isinstance(found, dict):
            return found
    raise ModelAnswerMalformed()


def _clean(value: object) -> str | None:
    """A non-empty string of the answer, whitespace collapsed; None for anything else."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        value = str(value)
    if not isinstance(value, str):
        return None
    cleaned = " ".join(value.split())
    return cleaned or None


def parse_summary(text: str) -> Built:
    """The summary in the model's answer; ``ModelAnswerMalformed`` when it holds none.

    Wanted: ``{"text", "points": [...], "actions": [{"text", "who"}]}``. A
    missing or empty paragraph is malformed; points and actions that are
    not lists are malformed; an item of the wrong shape is left out (a
    plain string is taken as an action without ``who``).
    """
    found = _json_object(text)
    paragraph = _clean(found.get("text") or found.get("summary"))
    points = found.get("points", [])
    actions = found.get("actions", [])
    if paragraph is None or not isinstance(points, list) or not isinstance(actions, list):
        raise ModelAnswerMalformed()
    kept_points = tuple(p for p in map(_clean, points) if p is not None)[:MAX_POINTS]
    kept_actions: list[Action] = []
    for item in actions:
        if isinstance(item, dict):
            what = _clean(item.get("text"))
            who = _clean(item.get("who"))
        else:
            what, who = _clean(item), None
        if what is not None:
            kept_actions.append(Action(text=what, who=None if who in _NOBODY else who))
    return Built(text=paragraph, points=kept_points, actions=tuple(kept_actions[:MAX_ACTIONS]))


#: What models write for "nobody in particular" instead of null.
_NOBODY = frozenset({None, "null", "None", "none", "-", "unknown", "Unknown"})


def parse_answer(text: str, *, known: Sequence[int]) -> PieceAnswer:
    """The answer and the line numbers it rests on; numbers of no line sent are dropped."""
    found = _json_object(text)
    answer = _clean(found.get("answer"))
    if answer is None:
        raise ModelAnswerMalformed()
    lines = found.get("lines", found.get("quotes", []))
    if not isinstance(lines, list):
        lines = []
    allowed = set(known)
    numbers: list[int] = []
    for item in lines:
        number = _line_number(item)
        if number is not None and number in allowed and number not in numbers:
            numbers.append(number)
    return answer, tuple(numbers[:MAX_QUOTES])


def _line_number(item: object) -> int | None:
    """A line number as models write it: 12, "12", "[12]"."""
    if isinstance(item, bool):
        return None
    if isinstance(item, int):
        return item
    if isinstance(item, str):
        match = re.fullmatch(r"\s*\[?(\d{1,7})\]?\s*", item)
        return int(match.group(1)) if match else None
    return None


def quotes_of(numbers: Sequence[int], lines: Sequence[Line]) -> tuple[Quote, ...]:
    """The moments of the lines ``numbers`` names, with their real times and words, in order."""
    by_number = {line.number: line for line in lines}
    return tuple(
        Quote(start=by_number[n].start, end=by_number[n].end, text=by_number[n].text)
        for n in sorted(set(numbers))
        if n in by_number
    )


def _clock(seconds: float) -> str:
    whole = max(int(seconds), 0)
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours:02d}:{minutes:02d}:{secs:02d}"
