"""What both SQL dialects do with the rows a search's index found (ADR 58), written once.

A search selects ``SEARCH_COLUMNS`` and the dialect's count of the job's words;
``candidates`` locates the first match in each text (the core's rule: a row it
refuses is dropped); the dialect reads the one word at that place
(``Candidate.hit_with_word``), or, when the words do not line up with the
text, every word (``Candidate.hit_with_words``). A long transcript's words
are not decoded for the common case.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime
from typing import Any, LiteralString

import attrs

from transcriber_core.search import Hit, Located, SearchQuery, hit_of, locate

#: What a search reads of each row its index found, in order; the dialect adds its count
#: of the row's words (``json_array_length``, ``jsonb_array_length``) after them.
SEARCH_COLUMNS: tuple[LiteralString, ...] = ("id", "created", "text", "title")


@attrs.frozen(kw_only=True)
class Candidate:
    """A row the index found whose text the core's rule matched."""

    job_id: str
    created: datetime
    text: str
    word_count: int
    located: Located
    #: The job's title (ADR 79), given to its hit.
    title: str | None = attrs.field(default=None, repr=False)

    @property
    def needs_one_word(self) -> bool:
        """True when the word at ``located.index`` is the match: read only that one."""
        return self.located.lines_up(self.word_count)

    @property
    def word_index(self) -> int:
        """The index of the word to read when ``needs_one_word``."""
        return self.located.index

    def hit_with_word(self, word_text: str, word_start: float) -> Hit | None:
        """The hit from the one word read; None when it does not match (read every word)."""
        hit = self.located.hit_with_word(
            job_id=self.job_id, created=self.created, word_text=word_text, word_start=word_start
        )
        return None if hit is None else attrs.evolve(hit, title=self.title)

    def hit_with_words(self, words: str | Sequence[dict[str, Any]]) -> Hit | None:
        """The hit from every word: the words column as stored (JSON text, or decoded jsonb)."""
        items = json.loads(words) if isinstance(words, str) else words
        hit = hit_of(
            self.located.query,
            job_id=self.job_id,
            created=self.created,
            text=self.text,
            word_texts=[item["text"] for item in items],
            word_starts=[item["start"] for item in items],
        )
        return None if hit is None else attrs.evolve(hit, title=self.title)


def candidates(
    query: SearchQuery,
    rows: Iterable[Sequence[Any]],
    time_from_db: Callable[[Any], datetime] | None = None,
) -> list[Candidate]:
    """The rows (``SEARCH_COLUMNS`` and the count of words) whose text matches, in order."""
    found = []
    for job_id, created, text, title, word_count in rows:
        located = locate(query, text)
        if located is None:
            continue
        found.append(
            Candidate(
                job_id=job_id,
                created=created if time_from_db is None else time_from_db(created),
                text=text,
                word_count=word_count,
                located=located,
                title=title,
            )
        )
    return found
