"""A person's correction of a done transcript, in place, keeping the words' timings (ADR 57).

The transcript page edits a stretch of the words (one turn: the index range
``[start, end)`` of ``Job.words``) as plain text. ``correction_of`` turns the
stretch's new text into new words and the job's new text:

- the stretch's old tokens and the new ones are compared as normalised
  tokens (case folded, punctuation dropped) with ``difflib.SequenceMatcher``,
  after their common beginning and end are set aside;
- an equal token keeps its word exactly (its timing, and its text unless the
  token is spelled anew: other case or punctuation);
- a run of ``n`` old words replaced by ``m`` new ones shares the old run's
  span among the new words by their lengths;
- an inserted word takes the gap between its neighbours, shared the same way;
  with no gap (or words that overlap) it is zero-length at the next word's
  start, or at the previous word's end at the very end of the recording;
- a deleted word vanishes; an empty text deletes the whole stretch;
- each new word keeps the speaker of the old word it stands in for (an
  inserted word, its previous neighbour's in the stretch).

Given words whose starts never go back in time and that never end before
they start, the new words keep both; given words that also never overlap,
they never overlap either. The job's text is rebuilt: where its tokens lined
up one to one with the words (the case where the exports show the text's own
punctuation), the stretch's tokens are replaced in it; otherwise it is the
words' texts joined by spaces. The recognizer's original is kept in the
correction from the first one on; ``restoration_of`` puts it back.
Pure rules, no I/O.
"""

from __future__ import annotations

import difflib
import unicodedata
from collections.abc import Sequence

import attrs

from transcriber_core.entities import Correction, Job, State, Word

#: The longest corrected text of one stretch, in characters.
MAX_TEXT_CHARS = 20_000
#: The most words one correction may replace (a long turn is corrected in pieces).
MAX_STRETCH_WORDS = 5_000


class BadCorrection(ValueError):  # noqa: N818 - named for its HTTP codes
    """A correction that is refused; ``code`` is stable (HTTP 400), the message says why."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def shown_tokens(job: Job) -> list[str]:
    """The token shown for each word: the text's own where it lines up with the words.

    The same rule the exports follow (``subtitles``): when the text has as
    many tokens as there are words, its tokens (with their punctuation and
    case) stand for the words; otherwise the words' own texts do.
    """
    spelled = (job.text or "").split()
    if len(spelled) == len(job.words):
        return spelled
    return [word.text for word in job.words]


def check_correction(job: Job, start: int, end: int, text: str) -> None:
    """Raise ``BadCorrection`` unless ``text`` may replace the done job's words ``[start, end)``."""
    if job.state is not State.DONE:
        raise BadCorrection("not_done", "only a done transcript can be corrected")
    if not job.words:
        raise BadCorrection("no_words", "this transcript has no timed words to correct")
    if not (0 <= start < end <= len(job.words)):
        raise BadCorrection(
            "bad_range", f"start and end must satisfy 0 <= start < end <= {len(job.words)}"
        )
    if end - start > MAX_STRETCH_WORDS:
        raise BadCorrection(
            "bad_range", f"a correction replaces at most {MAX_STRETCH_WORDS} words at once"
        )
    if len(text) > MAX_TEXT_CHARS:
        raise BadCorrection(
            "text_too_long", f"the corrected text must be at most {MAX_TEXT_CHARS} characters"
        )
    if any(unicodedata.category(c) == "Cc" and not c.isspace() for c in text):
        raise BadCorrection("bad_text", "the corrected text must not contain control characters")


def correction_of(job: Job, start: int, end: int, text: str) -> Correction:
    """The done job's transcript with its words ``[start, end)`` replaced by those of ``text``.

    Checked first (``BadCorrection``). The original is the recognizer's:
    the job's current text and words at its first correction, kept as they
    were at every later one.
    """
    check_correction(job, start, end, text)
    tokens = text.split()
    shown = shown_tokens(job)
    before = job.words[start - 1].end if start > 0 else None
    after = job.words[end].start if end < len(job.words) else None
    stretch = realign(job.words[start:end], shown[start:end], tokens, before=before, after=after)
    words = (*job.words[:start], *stretch, *job.words[end:])
    spelled = (job.text or "").split()
    if len(spelled) == len(job.words):
        new_text = " ".join([*spelled[:start], *tokens, *spelled[end:]])
    else:
        new_text = " ".join(word.text for word in words)
    if job.corrected:
        return Correction(
            text=new_text,
            words=words,
            original_text=job.original_text,
            original_words=job.original_words or (),
        )
    return Correction(
        text=new_text, words=words, original_text=job.text or "", original_words=job.words
    )


def restoration_of(job: Job) -> Correction:
    """The done job's transcript as the recognizer gave it; ``BadCorrection`` if never corrected."""
    if job.state is not State.DONE:
        raise BadCorrection("not_done", "only a done transcript can be restored")
    if job.original_text is None:
        raise BadCorrection("not_corrected", "this transcript has no correction to undo")
    return Correction(text=job.original_text, words=job.original_words or ())


def normalised(token: str) -> str:
    """``token`` as corrections compare it: NFKC, case folded, without punctuation."""
    folded = unicodedata.normalize("NFKC", token).casefold()
    return "".join(c for c in folded if not unicodedata.category(c).startswith("P"))


def realign(
    old: Sequence[Word],
    labels: Sequence[str],
    tokens: Sequence[str],
    *,
    before: float | None = None,
    after: float | None = None,
) -> tuple[Word, ...]:
    """New words for ``tokens`` in place of ``old`` (shown as ``labels``), timed from ``old``.

    ``before`` is the end of the word just before the stretch and ``after``
    the start of the one just after it (None at the recording's ends): new
    words never reach past them.
    """
    if len(labels) != len(old):
        raise ValueError("each old word needs its label")
    if not old:
        raise ValueError("a stretch has at least one word")
    was = [normalised(label) for label in labels]
    now = [normalised(token) for token in tokens]
    head = 0
    while head < min(len(was), len(now)) and was[head] == now[head]:
        head += 1
    tail = 0
    while tail < min(len(was), len(now)) - head and was[-1 - tail] == now[-1 - tail]:
        tail += 1
    matcher = difflib.SequenceMatcher(
        None, was[head : len(was) - tail], now[head : len(now) - tail], autojunk=False
    )
    opcodes: list[tuple[str, int, int, int, int]] = []
    if head:
        opcodes.append(("equal", 0, head, 0, head))
    for op, a1, a2, b1, b2 in matcher.get_opcodes():
        opcodes.append((op, a1 + head, a2 + head, b1 + head, b2 + head))
    if tail:
        opcodes.append(("equal", len(was) - tail, len(was), len(now) - tail, len(now)))
    made: list[Word] = []
    for tag, i1, i2, j1, j2 in opcodes:
        following = old[i2].start if i2 < len(old) else after
        if tag == "equal":
            # A token spelled as it was shown leaves its word as it is; a new spelling
            # (case, punctuation) is taken with the word's timing.
            made.extend(
                old[i1 + k]
                if tokens[j1 + k] == labels[i1 + k]
                else attrs.evolve(old[i1 + k], text=tokens[j1 + k])
                for k in range(i2 - i1)
            )
        elif tag == "replace":
            low = old[i1].start
            high = old[i2 - 1].end if following is None else min(old[i2 - 1].end, following)
            speakers = [old[i1 + k * (i2 - i1) // (j2 - j1)].speaker for k in range(j2 - j1)]
            made.extend(_spread(tokens[j1:j2], low, max(high, low), speakers))
        elif tag == "insert":
            last = made[-1].end if made else before
            low, high = _gap(last, old[i1].start if i1 < len(old) else after)
            speaker = made[-1].speaker if made else old[min(i1, len(old) - 1)].speaker
            made.extend(_spread(tokens[j1:j2], low, high, [speaker] * (j2 - j1)))
        # "delete": the old words vanish.
    return tuple(made)


def _gap(last_end: float | None, next_start: float | None) -> tuple[float, float]:
    """Where inserted words go: between the neighbours, else zero-length at the next start."""
    if next_start is None:
        at = 0.0 if last_end is None else last_end
        return at, at
    if last_end is None or next_start <= last_end:
        return next_start, next_start
    return last_end, next_start


def _spread(
    tokens: Sequence[str], low: float, high: float, speakers: Sequence[str | None]
) -> list[Word]:
    """``tokens`` as words sharing ``[low, high]`` in order, each by its length."""
    weights = [max(1, len(token)) for token in tokens]
    total = sum(weights)
    span = high - low
    words = []
    done = 0
    for token, weight, speaker in zip(tokens, weights, speakers, strict=True):
        begin = min(high, low + span * done / total)
        done += weight
        finish = high if done == total else min(high, low + span * done / total)
        words.append(Word(text=token, start=begin, end=finish, speaker=speaker))
    return words
