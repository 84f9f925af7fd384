"""A person's correction of a done transcript, in place, keeping the words' timings (ADR 57).

The transcript page edits a stretch of the words (one turn: the index range
``[start, end)`` of ``Job.words``) as plain text. ``correction_of`` turns the
stretch's new text into new words and the job's new text:

- the stretch's old tokens and the new ones are compared as normalised
  tokens (case folded, punctuation dropped) and lined up by Myers' O(ND)
  difference (``alignment``, ADR 65): its work grows with how much changed,
  and past ``MAX_ALIGNMENT_STEPS`` the correction is refused
  (``correction_too_complex``) rather than kept waiting for;
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

A transcript grows by corrections only so far: at most ``GROWTH_FACTOR``
times what was recognised, or ``GROWTH_WORDS`` words (``GROWTH_CHARS``
characters) more, and never past ``MAX_WORDS`` (``MAX_CHARS``) unless the
recognizer heard more (``ceiling``); past it, ``transcript_too_long``.
Both refusals are ``CorrectionTooBig`` and are decided before any
alignment. ``correcting`` is ``correction_of`` as a generator that yields
between slices of its work, so a caller can serve others meanwhile and stop
when nobody waits for the answer. Pure rules, no I/O.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Generator, Sequence

import attrs

from transcriber_core import alignment
from transcriber_core.entities import Correction, Job, State, Word

#: The longest corrected text of one stretch, in characters.
MAX_TEXT_CHARS = 20_000
#: The most words one correction may replace (a long turn is corrected in pieces).
MAX_STRETCH_WORDS = 5_000
#: The most work one correction's alignment may do, in ``alignment`` steps (ADR 65): a
#: 5,000-word stretch with every tenth word changed takes well under 200,000, two
#: alternating tokens retyped as one 1,000 times about 130,000 (``bench/corrections.py``).
MAX_ALIGNMENT_STEPS = 1_000_000
#: A corrected transcript may be this many times as long as the recognised one ...
GROWTH_FACTOR = 2
#: ... or this many words longer, whichever allows more ...
GROWTH_WORDS = 1_000
#: ... (this many characters longer, for its text) ...
GROWTH_CHARS = 10_000
#: ... but never longer than this many words (more than 8 hours of speech) ...
MAX_WORDS = 100_000
#: ... nor this many characters, unless the recognizer's own transcript was longer.
MAX_CHARS = 1_000_000
#: Tokens normalised between two slices of ``correcting``.
_TOKENS_A_SLICE = 1_000


class BadCorrection(ValueError):  # noqa: N818 - named for its HTTP codes
    """A correction that is refused; ``code`` is stable (HTTP 400), the message says why."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class CorrectionTooBig(BadCorrection):
    """A well-formed correction refused for its cost or the transcript it would make (HTTP 422)."""


def ceiling(recognised: int, *, extra: int, largest: int) -> int:
    """The most a transcript recognised at ``recognised`` (words or characters) may grow to.

    ``GROWTH_FACTOR`` times as much or ``extra`` more, whichever is larger,
    capped at ``largest``; a transcript recognised past ``largest`` may keep
    its size but not grow.
    """
    return max(recognised, min(max(GROWTH_FACTOR * recognised, recognised + extra), largest))


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
    check_size(job, start, end, text)


def corrected_text(job: Job, start: int, end: int, text: str) -> str:
    """The job's text once ``text`` replaces its words ``[start, end)``.

    The shown tokens with the stretch's replaced: where the text lined up
    with the words they are the text's own, else the words' texts, and the
    new words' texts are the typed tokens either way.
    """
    shown = shown_tokens(job)
    return " ".join([*shown[:start], *text.split(), *shown[end:]])


def check_size(job: Job, start: int, end: int, text: str) -> None:
    """Raise ``CorrectionTooBig`` if the correction grows the transcript past its ``ceiling``.

    A correction that does not grow it is let through, so a transcript
    already past its ceiling (made before there was one) can be trimmed.
    """
    recognised_words = len((job.original_words or ()) if job.corrected else job.words)
    recognised_chars = len((job.original_text if job.corrected else job.text) or "")
    words = len(job.words) - (end - start) + len(text.split())
    most_words = ceiling(recognised_words, extra=GROWTH_WORDS, largest=MAX_WORDS)
    if words > max(most_words, len(job.words)):
        raise CorrectionTooBig(
            "transcript_too_long",
            f"a corrected transcript may have at most {most_words} words "
            f"(this one was recognised with {recognised_words})",
        )
    chars = len(corrected_text(job, start, end, text))
    most_chars = ceiling(recognised_chars, extra=GROWTH_CHARS, largest=MAX_CHARS)
    if chars > max(most_chars, len(job.text or "")):
        raise CorrectionTooBig(
            "transcript_too_long",
            f"a corrected transcript may have at most {most_chars} characters "
            f"(this one was recognised with {recognised_chars})",
        )


def correction_of(
    job: Job, start: int, end: int, text: str, *, budget: int = MAX_ALIGNMENT_STEPS
) -> Correction:
    """The done job's transcript with its words ``[start, end)`` replaced by those of ``text``.

    Checked first (``BadCorrection``; ``CorrectionTooBig`` past the
    transcript's ceiling or past ``budget`` steps of alignment). The original
    is the recognizer's: the job's current text and words at its first
    correction, kept as they were at every later one.
    """
    return alignment.finished(correcting(job, start, end, text, budget=budget))


def correcting(
    job: Job,
    start: int,
    end: int,
    text: str,
    *,
    budget: int = MAX_ALIGNMENT_STEPS,
    slice_steps: int = alignment.SLICE_STEPS,
) -> Generator[None, None, Correction]:
    """``correction_of`` in slices: yields between them, returns the correction.

    Everything is checked before the first slice; each slice does at most
    about ``slice_steps`` steps of alignment (or a thousand tokens' normalising).
    """
    check_correction(job, start, end, text)
    tokens = text.split()
    shown = shown_tokens(job)
    before = job.words[start - 1].end if start > 0 else None
    after = job.words[end].start if end < len(job.words) else None
    stretch = yield from realigning(
        job.words[start:end],
        shown[start:end],
        tokens,
        before=before,
        after=after,
        budget=budget,
        slice_steps=slice_steps,
    )
    words = (*job.words[:start], *stretch, *job.words[end:])
    new_text = corrected_text(job, start, end, text)
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
    budget: int = MAX_ALIGNMENT_STEPS,
) -> tuple[Word, ...]:
    """New words for ``tokens`` in place of ``old`` (shown as ``labels``), timed from ``old``.

    ``before`` is the end of the word just before the stretch and ``after``
    the start of the one just after it (None at the recording's ends): new
    words never reach past them. ``CorrectionTooBig`` past ``budget`` steps.
    """
    return alignment.finished(
        realigning(old, labels, tokens, before=before, after=after, budget=budget)
    )


def realigning(
    old: Sequence[Word],
    labels: Sequence[str],
    tokens: Sequence[str],
    *,
    before: float | None = None,
    after: float | None = None,
    budget: int = MAX_ALIGNMENT_STEPS,
    slice_steps: int = alignment.SLICE_STEPS,
) -> Generator[None, None, tuple[Word, ...]]:
    """``realign`` in slices: yields between them, returns the new words."""
    if len(labels) != len(old):
        raise ValueError("each old word needs its label")
    if not old:
        raise ValueError("a stretch has at least one word")
    was: list[str] = []
    now: list[str] = []
    for into, source in ((was, labels), (now, tokens)):
        for index, token in enumerate(source, start=1):
            into.append(normalised(token))
            if index % _TOKENS_A_SLICE == 0:
                yield
    try:
        lined_up = yield from alignment.aligning(was, now, budget=budget, slice_steps=slice_steps)
    except alignment.AlignmentTooCostly:
        raise CorrectionTooBig(
            "correction_too_complex",
            "this correction changes too much of the turn at once to keep its words' timings; "
            "save it in smaller steps",
        ) from None
    made: list[Word] = []
    for tag, i1, i2, j1, j2 in lined_up.opcodes:
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
