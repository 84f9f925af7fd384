"""A finished job's transcript as subtitles (SRT, WebVTT) and as a timed document (ADR 34).

Pure rules in the shape of ``splitting.py``. ``cues`` cuts the job's words
into cues of at most ``MAX_LINES`` lines of ``MAX_LINE_CHARS`` characters
and ``MAX_CUE_SECONDS`` seconds each:

- a silence of ``SILENCE_SECONDS`` or more always ends a cue, so no text
  stays on screen through it;
- otherwise a cue takes as many words as fit, and of the places it could
  end, the strongest wins: a sentence end, then a pause of
  ``PAUSE_SECONDS``, then a clause mark (``, ; :``), then the last word
  that fits; among equals the latest;
- a word longer than a line is cut into line-long pieces, its time shared
  by their lengths;
- times are whole milliseconds, each cue shown at least
  ``MIN_CUE_SECONDS`` where the next one leaves room, never overlapping it.

Without word timings (a recognizer that gives none), one cue spans the
whole recording: from 0 to the job's duration or, when that was not
measured, to a reading-time estimate of the text. ``srt`` and ``webvtt``
render cues; ``transcript`` is the JSON document (SPEC §15).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import attrs

from transcriber_core.entities import Job, Speaker, Word

#: Characters on one line of a cue.
MAX_LINE_CHARS = 42
#: Lines in one cue.
MAX_LINES = 2
#: Longest a cue stays on screen, in seconds.
MAX_CUE_SECONDS = 7.0
#: A gap between words this long is a pause: a good place to end a cue.
PAUSE_SECONDS = 0.5
#: A gap between words this long always ends a cue.
SILENCE_SECONDS = 2.0
#: The shortest a cue is shown, in seconds, where the next cue leaves room.
MIN_CUE_SECONDS = 1.0
#: Reading speed that times the one cue of a transcript without timings or duration.
READING_CHARS_PER_SECOND = 15.0

#: A token ending in one of these ends a sentence (closing quotes and brackets aside).
_SENTENCE_ENDS = frozenset(".!?…")
#: A token ending in one of these ends a clause.
_CLAUSE_ENDS = frozenset(",;:\u2014\u2013")  # em and en dashes
#: Trailing characters looked through to find a token's punctuation.
_CLOSERS = "\"'»”\u2019)]}"  # \u2019: right single quote

#: Break strengths, weakest first.
_ANY, _CLAUSE, _PAUSE, _SENTENCE = range(4)


@attrs.frozen(kw_only=True)
class Cue:
    """One subtitle: its lines, shown from ``start`` to ``end`` seconds."""

    start: float
    end: float
    #: At most ``MAX_LINES`` lines of at most ``MAX_LINE_CHARS`` characters (untimed: any number).
    lines: tuple[str, ...]
    #: Who says it (a speaker id); None when speakers were not labelled. A cue has one speaker.
    speaker: str | None = None

    @property
    def text(self) -> str:
        """The cue's words on one line."""
        return " ".join(self.lines)


@attrs.frozen(kw_only=True)
class TimedWord:
    """A word of the JSON document, as the recognizer timed it."""

    word: str
    start: float
    end: float
    speaker: str | None = None


@attrs.frozen(kw_only=True)
class Segment:
    """A cue in the JSON document."""

    start: float
    end: float
    text: str
    speaker: str | None = None


@attrs.frozen(kw_only=True)
class Transcript:
    """The JSON form of a finished job's transcript (SPEC §15); seconds as numbers."""

    job_id: str
    text: str
    #: The recording's measured length; None when it was not measured.
    duration: float | None
    words: tuple[TimedWord, ...]
    segments: tuple[Segment, ...]
    #: The voices, in order of first word; empty when speakers were not labelled.
    speakers: tuple[Speaker, ...] = ()


@attrs.frozen
class _Token:
    """A piece of a cue: a word, or a line-long piece of a longer word."""

    text: str
    start: float
    end: float
    speaker: str | None = None


def transcript(job: Job) -> Transcript:
    """The JSON document of ``job``: its text, duration, words and the cues as segments.

    A word whose times are not finite numbers is left out: JSON cannot carry them.
    """
    return Transcript(
        job_id=job.id,
        text=job.text or "",
        duration=job.duration,
        words=tuple(
            TimedWord(word=w.text, start=w.start, end=w.end, speaker=w.speaker)
            for w in job.words
            if math.isfinite(w.start) and math.isfinite(w.end)
        ),
        segments=tuple(
            Segment(start=cue.start, end=cue.end, text=cue.text, speaker=cue.speaker)
            for cue in cues(job.words, text=job.text or "", duration=job.duration)
        ),
        speakers=job.speakers,
    )


def cues(words: Sequence[Word], *, text: str, duration: float | None) -> tuple[Cue, ...]:
    """The subtitles of a transcript: from its timed ``words``, else one cue for the whole ``text``.

    When the transcript's own tokens line up one to one with the words, the
    cues show those (they carry the punctuation and case that mark
    sentences); otherwise the words as the recognizer spelled them.
    """
    tokens = _tokens(words, text)
    if not tokens:
        return _untimed(text, duration)
    found: list[Cue] = []
    begin = 0
    while begin < len(tokens):
        end = _cue_end(tokens, begin)
        found.append(_cue(tokens[begin:end]))
        begin = end
    return tuple(_for_players(found, duration))


def srt(found: Sequence[Cue], names: Mapping[str, str] | None = None) -> str:
    """SubRip text: numbered cues, ``HH:MM:SS,mmm`` times, a blank line after each.

    With speakers, a cue whose speaker differs from the cue before starts
    with its name: ``Diane: ...``.
    """
    names = names or {}
    return "".join(
        f"{number}\n{_clock(cue.start, ',')} --> {_clock(cue.end, ',')}\n"
        + "".join(
            f"{_named(line, cue, names) if index == 0 and changes else line}\n"
            for index, line in enumerate(cue.lines)
        )
        + "\n"
        for number, (cue, changes) in enumerate(_changes(found), start=1)
    )


def webvtt(found: Sequence[Cue], names: Mapping[str, str] | None = None) -> str:
    """WebVTT text: the header, then each cue with ``HH:MM:SS.mmm`` times, its text escaped.

    With speakers, each cue's text is in a voice span: ``<v Diane>...``.
    """
    names = names or {}
    return "WEBVTT\n\n" + "".join(
        f"{_clock(cue.start, '.')} --> {_clock(cue.end, '.')}\n"
        + _voice(cue, names)
        + "".join(f"{_vtt_escape(line)}\n" for line in cue.lines)
        + "\n"
        for cue in found
    )


def plain_text(words: Sequence[Word], *, text: str, names: Mapping[str, str]) -> str:
    """The transcript as text: with speakers, a paragraph per turn, ``Name: ...``; else ``text``."""
    tokens = _tokens(words, text)
    if not tokens or all(token.speaker is None for token in tokens):
        return f"{text}\n" if text else ""
    turns: list[tuple[str | None, list[str]]] = []
    for token in tokens:
        if not turns or turns[-1][0] != token.speaker:
            turns.append((token.speaker, []))
        turns[-1][1].append(token.text)
    return "\n".join(f"{_name(speaker, names)}: {' '.join(said)}\n" for speaker, said in turns)


def _name(speaker: str | None, names: Mapping[str, str]) -> str:
    """The name shown for ``speaker``."""
    if speaker is None:
        return "Unknown"
    return names.get(speaker) or f"Speaker {speaker.removeprefix('S')}"


def _changes(found: Sequence[Cue]) -> list[tuple[Cue, bool]]:
    """Each cue with whether its speaker differs from the cue before (speakers labelled only)."""
    marked: list[tuple[Cue, bool]] = []
    previous: str | None = None
    for cue in found:
        marked.append((cue, cue.speaker is not None and cue.speaker != previous))
        previous = cue.speaker
    return marked


def _named(line: str, cue: Cue, names: Mapping[str, str]) -> str:
    """``line`` behind its cue's speaker's name."""
    return f"{_name(cue.speaker, names)}: {line}"


def _voice(cue: Cue, names: Mapping[str, str]) -> str:
    """The WebVTT voice tag of ``cue``'s speaker, or nothing without one."""
    if cue.speaker is None:
        return ""
    name = _vtt_escape(_name(cue.speaker, names)).replace("\n", " ")
    return f"<v {name}>"


def wrap(text: str) -> tuple[str, ...]:
    """``text`` in lines of at most ``MAX_LINE_CHARS`` characters, words cut only when too long."""
    lines: list[str] = []
    for piece in _pieces(text.split()):
        if lines and len(lines[-1]) + 1 + len(piece) <= MAX_LINE_CHARS:
            lines[-1] = f"{lines[-1]} {piece}"
        else:
            lines.append(piece)
    return tuple(lines)


def ends_sentence(word: str) -> bool:
    """True when ``word`` ends a sentence: its last mark, closing quotes aside, is ``. ! ? …``."""
    return word.rstrip(_CLOSERS)[-1:] in _SENTENCE_ENDS


def _tokens(words: Sequence[Word], text: str) -> list[_Token]:
    """The words to show, cleaned and in time order, long ones cut into line-long pieces.

    Times are made safe for players: in milliseconds, never negative,
    each start after the one before, never ending before they start.
    """
    spelled = text.split()
    shown = spelled if len(spelled) == len(words) else [word.text for word in words]
    timed: list[tuple[str, float, float, str | None]] = []
    for word, label in zip(words, shown, strict=True):
        # Whitespace inside a word separates tokens: no newline reaches a cue.
        pieces = _pieces(label.split())
        if not pieces or not (math.isfinite(word.start) and math.isfinite(word.end)):
            continue
        total = sum(len(piece) for piece in pieces)
        at, length = word.start, max(word.end - word.start, 0.0)
        for piece in pieces:
            timed.append((piece, at, at + length * len(piece) / total, word.speaker))
            at += length * len(piece) / total
    tokens: list[_Token] = []
    earliest = 0.0
    for label, said, until, speaker in timed:
        # On the millisecond grid the files are written in, each token starts
        # after the one before, so every cue can end after it starts.
        start = max(round(said, 3), earliest)
        tokens.append(_Token(label, start, max(round(until, 3), start), speaker))
        earliest = round(start + 0.001, 3)
    return tokens


def _pieces(labels: Sequence[str]) -> list[str]:
    """Each label, those longer than a line cut into ``MAX_LINE_CHARS``-character pieces."""
    return [
        label[at : at + MAX_LINE_CHARS]
        for label in labels
        for at in range(0, len(label), MAX_LINE_CHARS)
    ]


def _cue_end(tokens: Sequence[_Token], begin: int) -> int:
    """Where the cue from ``tokens[begin]`` ends (exclusive): the strongest break that fits.

    Lines are filled as ``wrap`` fills them, one token at a time, so a cue
    costs time in its own length only.
    """
    best, best_strength = begin + 1, -1
    lines, width, last_end = 1, len(tokens[begin].text), tokens[begin].end
    for end in range(begin + 1, len(tokens) + 1):
        # Here tokens[begin:end] fit one cue.
        if end == len(tokens):
            return end
        previous, following = tokens[end - 1], tokens[end]
        if following.speaker != previous.speaker:
            return end  # a cue never mixes two speakers
        strength = _strength(previous, following)
        if strength >= best_strength:
            best, best_strength = end, strength
        if following.start - previous.end >= SILENCE_SECONDS:
            break
        if width + 1 + len(following.text) <= MAX_LINE_CHARS:
            width += 1 + len(following.text)
        else:
            lines, width = lines + 1, len(following.text)
        last_end = max(last_end, following.end)
        if lines > MAX_LINES or last_end - tokens[begin].start > MAX_CUE_SECONDS:
            break
    return best


def _strength(last: _Token, following: _Token) -> int:
    """How good a place the gap between ``last`` and ``following`` is to end a cue."""
    if ends_sentence(last.text):
        return _SENTENCE
    if following.start - last.end >= PAUSE_SECONDS:
        return _PAUSE
    if last.text.rstrip(_CLOSERS)[-1:] in _CLAUSE_ENDS:
        return _CLAUSE
    return _ANY


def _cue(tokens: Sequence[_Token]) -> Cue:
    """One cue of ``tokens``: two lines as even as can be, at most ``MAX_CUE_SECONDS`` long."""
    text = " ".join(token.text for token in tokens)
    lines = wrap(text)
    if len(lines) == MAX_LINES:
        lines = _balanced(text.split())
    start = tokens[0].start
    end = min(_last_end(tokens), start + MAX_CUE_SECONDS)
    return Cue(start=start, end=end, lines=lines, speaker=tokens[0].speaker)


def _last_end(tokens: Sequence[_Token]) -> float:
    """When the last of ``tokens`` stops sounding (an earlier word may outlast a later one)."""
    return max(token.end for token in tokens)


def _balanced(words: Sequence[str]) -> tuple[str, ...]:
    """Two lines of ``words`` split where the longer line is shortest; ``wrap`` found one split."""
    splits = (
        (" ".join(words[:at]), " ".join(words[at:]))
        for at in range(1, len(words))
        if len(" ".join(words[:at])) <= MAX_LINE_CHARS
        and len(" ".join(words[at:])) <= MAX_LINE_CHARS
    )
    return min(splits, key=lambda pair: max(len(pair[0]), len(pair[1])))


def _for_players(found: Sequence[Cue], duration: float | None) -> list[Cue]:
    """Each cue shown ``MIN_CUE_SECONDS`` at least where the next allows; no overlaps.

    None ends after the recording (a recognizer's last word may be timed past
    it, and the minimum would stretch a last cue beyond it); one whose words
    all start after it is shown in the recording's last millisecond.
    """
    last = duration if duration is not None and math.isfinite(duration) and duration > 0 else None
    shown: list[Cue] = []
    previous_end = 0.0
    for cue, following in zip(found, [c.start for c in found[1:]] + [math.inf], strict=True):
        start = cue.start
        end = min(max(cue.end, round(start + MIN_CUE_SECONDS, 3)), following)
        if last is not None:
            end = min(end, round(last, 3))
            start = min(start, max(previous_end, round(end - 0.001, 3)))
        shown.append(attrs.evolve(cue, start=start, end=end))
        previous_end = end
    return shown


def _untimed(text: str, duration: float | None) -> tuple[Cue, ...]:
    """One cue for a transcript without timings: the whole recording, or a reading time."""
    lines = wrap(text)
    if not lines:
        return ()
    if duration is None or not math.isfinite(duration) or duration <= 0:
        duration = max(MIN_CUE_SECONDS, len(" ".join(text.split())) / READING_CHARS_PER_SECOND)
    return (Cue(start=0.0, end=duration, lines=lines),)


def _clock(seconds: float, separator: str) -> str:
    """``HH:MM:SS<separator>mmm`` for a time in seconds, rounded to the millisecond."""
    millis = round(max(seconds, 0.0) * 1000)
    hours, millis = divmod(millis, 3_600_000)
    minutes, millis = divmod(millis, 60_000)
    whole, millis = divmod(millis, 1000)
    return f"{hours:02d}:{minutes:02d}:{whole:02d}{separator}{millis:03d}"


def _vtt_escape(line: str) -> str:
    """A line safe in a WebVTT cue: markup characters escaped, so no ``-->`` is left either."""
    return line.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
