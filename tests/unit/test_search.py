"""The core's search rule (ADR 58): what a query is, what matches, and what a hit shows."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from transcriber_core.search import (
    MAX_TERM_CHARACTERS,
    MAX_TERMS,
    Fragment,
    Hit,
    SearchQuery,
    hit_of,
)

WHEN = datetime(2026, 12, 3, tzinfo=UTC)


def hit(raw: str, text: str, words: list[str] | None = None) -> Hit | None:
    """``hit_of`` for ``text``, with ``words`` (default: none) one a second."""
    texts = words or []
    return hit_of(
        SearchQuery.parse(raw),
        job_id="j",
        created=WHEN,
        text=text,
        word_texts=texts,
        word_starts=[float(n) for n in range(len(texts))],
    )


@pytest.mark.parametrize(
    ("raw", "terms"),
    [
        ("Fox", ("fox",)),
        ('"quick" (brown) fox* -dog NEAR/3', ("quick", "brown", "fox", "dog", "near", "3")),
        ("fox fox FOX", ("fox",)),
        ("snake_case e-mail", ("snake", "case", "e", "mail")),
        ("ＦＵＬＬ ﬁsh", ("full", "fish")),  # noqa: RUF001 - NFKC folds them on purpose
        ("Ещё ДЕНЬ", ("ещё", "день")),
        ("", ()),
        ("*:&|!()<->'\"\\", ()),
    ],
)
def test_a_query_is_its_folded_words(raw: str, terms: tuple[str, ...]) -> None:
    """Letters and digits, folded, each once, in order; everything else separates them."""
    assert SearchQuery.parse(raw).terms == terms


def test_a_query_is_bounded() -> None:
    """At most ``MAX_TERMS`` words, each cut to ``MAX_TERM_CHARACTERS``: still a prefix."""
    many = SearchQuery.parse(" ".join(f"w{n}" for n in range(50)))
    assert len(many.terms) == MAX_TERMS
    (long,) = SearchQuery.parse("a" * 400).terms
    assert long == "a" * MAX_TERM_CHARACTERS


def test_a_query_refuses_syntax_given_as_terms() -> None:
    """Terms are checked: an adapter can never be handed a quote, a star or capitals."""
    for bad in ('fo"x', "fox*", "Fox", "a b", ""):
        with pytest.raises(ValueError, match="terms"):
            SearchQuery(terms=(bad,))


def test_the_first_match_inside_a_piece_is_that_piece() -> None:
    """ "mail" begins a word inside "e-mail,": that piece is the one marked, with its start."""
    found = hit("mail", "send the e-mail, then call", ["send", "the", "e-mail,", "then", "call"])
    assert found is not None
    assert (found.at, [f.text for f in found.snippet if f.marked]) == (2.0, ["e-mail,"])


def test_words_that_do_not_line_up_with_the_text_are_searched_one_by_one() -> None:
    """A text and words of different pieces: the words give the moment and the snippet."""
    found = hit("world", "hello world", ["hel", "lo", "wor", "world"])
    assert found is not None
    assert found.at == 3.0
    assert found.snippet[-1] == Fragment(text="world", marked=True)


def test_a_text_that_matches_with_no_word_that_does_gives_no_moment() -> None:
    """Text corrected apart from its words (by hand): the text's snippet, no ``at``."""
    found = hit("harbour", "the harbour", ["the", "port"])
    assert found is not None
    assert (found.at, found.snippet) == (
        None,
        (Fragment(text="the "), Fragment(text="harbour", marked=True)),
    )


def test_no_match_is_no_hit() -> None:
    """A transcript missing one of the words, or holding it only inside a word, is no hit."""
    assert hit("fox cat", "the fox", ["the", "fox"]) is None
    assert hit("ox", "the fox", ["the", "fox"]) is None
    assert hit("", "the fox", ["the", "fox"]) is None
