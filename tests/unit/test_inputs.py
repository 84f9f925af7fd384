"""The rules every JSON body is decoded by: depth, lone surrogates, UTF-8 (SPEC §29, ADR 68)."""

from __future__ import annotations

import json

import pytest

from transcriber_app.web.inputs import (
    BAD_UNICODE,
    JSON_STRING,
    MAX_DEPTH,
    TOO_DEEP,
    JsonRefused,
    decode_json,
    depth,
    holds_lone_surrogate,
)


def nested(levels: int, inner: str = "1") -> bytes:
    """``levels`` arrays, one inside the other, around ``inner``."""
    return ("[" * levels + inner + "]" * levels).encode()


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1", 0),
        ("[]", 1),
        ('{"a": [1, {"b": []}]}', 4),
        ('["[[[[", "]]]", "{{"]', 1),
        (r'["a \" [[[", {"k\\": ["]"]}]', 3),
        ("[[]] [[[]]]", 3),
    ],
)
def test_depth_counts_brackets_outside_strings(text: str, expected: int) -> None:
    """Brackets inside strings, escaped quotes included, do not count; siblings do not add up."""
    assert depth(text) == expected


def test_nesting_up_to_the_limit_decodes_and_past_it_is_refused() -> None:
    """``MAX_DEPTH`` levels decode as json would; one more is ``too_deep``."""
    assert decode_json(nested(MAX_DEPTH)) == json.loads(nested(MAX_DEPTH))
    with pytest.raises(JsonRefused) as refused:
        decode_json(nested(MAX_DEPTH + 1))
    assert refused.value.code == TOO_DEEP


@pytest.mark.parametrize("levels", [8_000, 30_000, 1024 * 1024 // 2])
def test_thousands_of_levels_are_refused_without_recursion(levels: int) -> None:
    """The red team's 8k and 30k ``[`` (and 512 Ki of them) are refused, never a RecursionError."""
    for body in (nested(levels), b"[" * levels, b'{"a":' * levels):
        with pytest.raises(JsonRefused) as refused:
            decode_json(body)
        assert refused.value.code == TOO_DEEP


@pytest.mark.parametrize(
    "body",
    [
        rb'"\ud800"',
        rb'{"S1": "Di\udfffane"}',
        rb'{"\ud83d": "key"}',
        rb'["ok", ["deeper", {"x": "\uDBFF"}]]',
        rb'"\ude00\ud83d"',
    ],
)
def test_a_lone_surrogate_anywhere_is_refused(body: bytes) -> None:
    """Half a surrogate pair, in a value or a key, at any depth, either half: ``bad_unicode``."""
    with pytest.raises(JsonRefused) as refused:
        decode_json(body)
    assert refused.value.code == BAD_UNICODE


def test_a_whole_surrogate_pair_is_a_character() -> None:
    """An escaped pair names one character and is kept; an escaped backslash is no escape."""
    assert decode_json(rb'{"name": "\ud83d\ude00 Ann"}') == {"name": "\U0001f600 Ann"}
    assert decode_json(rb'"\\ud800"') == "\\ud800"


@pytest.mark.parametrize(
    "body",
    [b'"\xed\xa0\x80"', b'"\xff"', '"Ann"'.encode("utf-16")],
)
def test_bytes_that_are_not_utf8_are_bad_unicode(body: bytes) -> None:
    """An encoded surrogate, a stray byte, UTF-16: not UTF-8 text, ``bad_unicode``."""
    with pytest.raises(JsonRefused) as refused:
        decode_json(body)
    assert refused.value.code == BAD_UNICODE


@pytest.mark.parametrize("body", [b"NaN", b"[Infinity]", b'{"v": -Infinity}', b"", b"[1,"])
def test_what_is_not_json_is_a_plain_value_error(body: bytes) -> None:
    """NaN and Infinity are not JSON; neither is a broken body: ValueError, the route's own code."""
    with pytest.raises(ValueError, match=r"(?i)NaN|Infinity|expecting|JSON") as raised:
        decode_json(body)
    assert not isinstance(raised.value, JsonRefused)


def test_a_byte_order_mark_is_ignored() -> None:
    """A UTF-8 BOM before the body is skipped, as json.loads did with bytes."""
    assert decode_json(b'\xef\xbb\xbf{"S1": "Ann"}') == {"S1": "Ann"}


def test_holds_lone_surrogate_walks_without_recursion() -> None:
    """Deep Python values are walked by a list, not the stack."""
    deep: list[object] = ["\ud800"]
    for _ in range(100_000):
        deep = [deep]
    assert holds_lone_surrogate(deep)
    assert not holds_lone_surrogate({"a": ["b", ("c", 1, None)]})


@pytest.mark.parametrize(
    "text",
    ['"' + '\\"' * 1000, '"' + '\\"' * 1000 + "\\", '"abc\n\\u12', '"' + "x" * 1000],
)
def test_an_unterminated_string_is_one_match_to_the_end(text: str) -> None:
    """An unterminated string is one match to the end: no quote in it starts a search again."""
    assert [m.span() for m in JSON_STRING.finditer(text)] == [(0, len(text))]
    with pytest.raises(ValueError, match=r"Unterminated|Invalid"):
        decode_json(text.encode())
