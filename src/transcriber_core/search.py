"""Full-text search over one's own transcripts: what a query means, and what a hit shows (ADR 58).

The stores find candidates with an index of their own (SQLite FTS5,
PostgreSQL ``tsvector``, a scan in memory); what a query is and where it
matches in a transcript is decided here, once, for all three:

- A query is its words: the text folded (NFKC, lower case) and cut into runs
  of letters and digits. Everything else (quotes, ``*``, ``-``, ``NEAR``,
  parentheses, ``:`` and ``&``) only separates words, so no query syntax of
  any store reaches it and no input can make a search fail.
- A transcript matches when each word of the query begins one of its words
  (prefix, case-insensitive): ``transcr`` finds "Transcription".
- A hit shows the stretch around the first matching word of the transcript
  with every matching word marked, and that word's start (seconds), so the
  result links to that moment of the recording.
"""

from __future__ import annotations

import bisect
import re
import unicodedata
from collections.abc import Sequence
from datetime import datetime

import attrs

#: A query longer than this is cut here before it is read: a search box, not a document.
MAX_QUERY_CHARACTERS = 500
#: Words of a query past this many are ignored.
MAX_TERMS = 16
#: A longer word of a query is cut to this many characters: still a prefix of what it was.
MAX_TERM_CHARACTERS = 64
#: The most hits one search returns.
MAX_HITS = 100
#: Words a snippet shows before the first matching word, and in all.
SNIPPET_BEFORE = 8
SNIPPET_WORDS = 28

# A word is a run of letters and digits (no underscore): FTS5's unicode61 and
# PostgreSQL's parser both split at an underscore, and so must the rule they prefilter for.
_WORD = re.compile(r"[^\W_]+")


def fold(text: str) -> str:
    """``text`` as searches compare it: NFKC-normalised, lower case."""
    return unicodedata.normalize("NFKC", text).lower()


def _is_term(term: str) -> bool:
    return _WORD.fullmatch(term) is not None and fold(term) == term


def _check_terms(_instance: object, _attribute: object, terms: tuple[str, ...]) -> None:
    if len(terms) > MAX_TERMS or not all(
        _is_term(term) and len(term) <= MAX_TERM_CHARACTERS for term in terms
    ):
        raise ValueError("a query's terms are folded runs of letters and digits")


@attrs.frozen(kw_only=True)
class SearchQuery:
    """A person's search, read once: the words to find, each a folded run of letters and digits.

    What a store's index is asked is built from ``terms`` alone, which hold no
    character any query language gives a meaning to.
    """

    #: The words, in the order typed, each once; empty: nothing to look for.
    terms: tuple[str, ...] = attrs.field(default=(), validator=_check_terms)

    @classmethod
    def parse(cls, raw: str) -> SearchQuery:
        """The query a person typed; never raises, whatever ``raw`` holds."""
        seen: dict[str, None] = {}
        for term in _WORD.findall(fold(raw[:MAX_QUERY_CHARACTERS])):
            seen.setdefault(term[:MAX_TERM_CHARACTERS], None)
        return cls(terms=tuple(seen)[:MAX_TERMS])

    @property
    def empty(self) -> bool:
        """True when there is nothing to look for: no store is asked."""
        return not self.terms

    def matches(self, text: str) -> bool:
        """True when each term begins a word of ``text``: the rule every store's hits obey."""
        return _holds_every_term(self, fold(text))


@attrs.frozen(kw_only=True)
class Fragment:
    """A stretch of a snippet; the page marks (``<mark>``) the stretches that matched."""

    text: str
    marked: bool = False


@attrs.frozen(kw_only=True)
class Hit:
    """One transcript a search found: whose, when, the stretch that matched, and its moment."""

    job_id: str
    #: When the recording was sent (the job's ``created``).
    created: datetime
    #: The words around the first match, the matching ones marked; plain text, never HTML.
    snippet: tuple[Fragment, ...]
    #: Whether the transcript goes on before and after the snippet.
    more_before: bool = False
    more_after: bool = False
    #: Start in seconds of the first matching word; None for a transcript without timings.
    at: float | None = None
    #: The recording's title; None: shown as its dated default (ADR 79).
    title: str | None = attrs.field(default=None, repr=False)


@attrs.frozen(kw_only=True)
class Located:
    """Where a query first matches a transcript's text: what a store reads the moment by.

    ``locate`` makes it from the text alone. When the transcript's words line
    up with the text's pieces (``lines_up``, as recognizers and corrections
    write them, ADR 57), the store reads only the word at ``index`` and asks
    ``hit_with_word``; otherwise, or when that word does not match, it reads
    every word and asks ``hit_of``. Either way no store decodes a long
    transcript's words for the common case.
    """

    query: SearchQuery
    #: The text's space-separated pieces.
    pieces: tuple[str, ...]
    #: The piece holding the first match.
    index: int

    def lines_up(self, word_count: int) -> bool:
        """True when the transcript has one timed word per piece of its text."""
        return word_count == len(self.pieces) > 0

    def hit_with_word(
        self, *, job_id: str, created: datetime, word_text: str, word_start: float
    ) -> Hit | None:
        """The hit, given the word at ``index`` (text and start); None when it does not match."""
        pattern = _pattern(self.query.terms)
        if pattern.search(fold(word_text)) is None:
            return None
        return _hit(pattern, self.pieces, self.index, job_id=job_id, created=created, at=word_start)


def locate(query: SearchQuery, text: str) -> Located | None:
    """Where ``query`` first matches ``text``; None when the text does not match it."""
    folded = fold(text)
    if not _holds_every_term(query, folded):
        return None
    pieces = tuple(text.split())
    index = _first_piece(query.terms, folded, len(pieces))
    if index is None:
        index = _first_match(_pattern(query.terms), pieces)
    return Located(query=query, pieces=pieces, index=index or 0)


def hit_of(
    query: SearchQuery,
    *,
    job_id: str,
    created: datetime,
    text: str,
    word_texts: Sequence[str] = (),
    word_starts: Sequence[float] = (),
) -> Hit | None:
    """The hit a transcript makes for ``query``; None when it does not match.

    ``word_texts`` and ``word_starts`` are the job's timed words (their text
    and start, in order; empty for a transcript of text alone). A store's
    index only proposes a transcript; this decides, so every store answers
    alike. The snippet and the moment come from the timed words when one of
    them matches, otherwise from the text (words separated by spaces). When
    the words line up with the text, the first matching piece of the text is
    that word, and no other word is folded.
    """
    located = locate(query, text)
    if located is None:
        return None
    if located.lines_up(len(word_texts)) and len(word_starts) == len(word_texts):
        hit = located.hit_with_word(
            job_id=job_id,
            created=created,
            word_text=word_texts[located.index],
            word_start=word_starts[located.index],
        )
        if hit is not None:
            return hit
    pattern = _pattern(query.terms)
    if word_texts:
        found = _first_match(pattern, word_texts)
        if found is not None:
            return _hit(
                pattern, word_texts, found, job_id=job_id, created=created, at=word_starts[found]
            )
    return _hit(pattern, located.pieces, located.index, job_id=job_id, created=created, at=None)


def _holds_every_term(query: SearchQuery, folded: str) -> bool:
    return bool(query.terms) and all(_find(folded, term) is not None for term in query.terms)


def _find(folded: str, term: str) -> int | None:
    """Where ``term`` first begins a word of ``folded``; None if nowhere.

    ``str.find`` and a look at the character before: several times quicker
    than a regular expression that starts with a look-behind, which is tried
    at every position of a long transcript.
    """
    start = folded.find(term)
    while start > 0 and folded[start - 1].isalnum():
        start = folded.find(term, start + 1)
    return None if start < 0 else start


def _pattern(terms: Sequence[str]) -> re.Pattern[str]:
    """Any of ``terms`` at the start of a word: not preceded by a letter or a digit."""
    alternatives = "|".join(re.escape(term) for term in terms)
    return re.compile(rf"(?<![^\W_])(?:{alternatives})")


def _first_piece(terms: Sequence[str], folded: str, pieces: int) -> int | None:
    """The index of the space-separated piece of ``folded`` holding the first match.

    None when nothing matches, or when folding changed how many pieces there
    are (NFKC turns a few characters into spaces): the caller then looks piece by piece.
    """
    found = [at for at in (_find(folded, term) for term in terms) if at is not None]
    if not found or len(folded.split()) != pieces:
        return None
    before = folded[: min(found)]
    index = len(before.split())
    if before and not before[-1].isspace():
        index -= 1  # the match is inside a piece already counted ("e-mail" for "mail")
    return index


def _first_match(pattern: re.Pattern[str], pieces: Sequence[str]) -> int | None:
    """The index of the first piece a term begins a word of, each piece folded on its own."""
    folded = [fold(piece) for piece in pieces]
    # One newline between pieces keeps a match from running across two.
    starts: list[int] = []
    offset = 0
    for piece in folded:
        starts.append(offset)
        offset += len(piece) + 1
    match = pattern.search("\n".join(folded))
    if match is None:
        return None
    return bisect.bisect_right(starts, match.start()) - 1


def _hit(
    pattern: re.Pattern[str],
    pieces: Sequence[str],
    found: int,
    *,
    job_id: str,
    created: datetime,
    at: float | None,
) -> Hit:
    first = max(0, found - SNIPPET_BEFORE)
    last = min(len(pieces), first + SNIPPET_WORDS)
    fragments: list[Fragment] = []
    for index in range(first, last):
        if index > first:
            _add(fragments, " ", marked=False)
        piece = pieces[index]
        _add(fragments, piece, marked=pattern.search(fold(piece)) is not None)
    return Hit(
        job_id=job_id,
        created=created,
        snippet=tuple(fragments),
        more_before=first > 0,
        more_after=last < len(pieces),
        at=at,
    )


def _add(fragments: list[Fragment], text: str, *, marked: bool) -> None:
    """Append ``text``, joining it to the last fragment when both are plain."""
    if fragments and not marked and not fragments[-1].marked:
        fragments[-1] = Fragment(text=fragments[-1].text + text)
    else:
        fragments.append(Fragment(text=text, marked=marked))
