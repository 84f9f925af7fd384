"""Text that comes in, read by one set of rules: JSON bodies and posted forms (SPEC §29, ADR 68).

``json.loads`` takes whatever RFC 8259's grammar allows, and two such things
were 500s (red team, round four): a ``\\ud800`` escape decodes to a lone
surrogate, a ``str`` that no UTF-8 encoder (SQLite, PostgreSQL, argon2, the
log) will take; and thousands of nested ``[`` make the C decoder recurse
into ``RecursionError``. ``decode_json`` wants UTF-8 (RFC 8259 §8.1),
arrays and objects nested at most ``MAX_DEPTH`` deep (counted before
decoding, without recursion), no lone surrogate (I-JSON, RFC 7493 §2.1) and
no ``NaN``/``Infinity`` (not JSON). Every JSON body is read through it
(``streams.read_json_object``: the API's speaker rename, the workspace's
corrections, the Telegram webhook).

A posted form can carry a lone surrogate too: Starlette decodes a multipart
form by the ``charset`` its ``Content-Type`` names, and ``utf-7`` or
``unicode_escape`` make one of a few ASCII bytes. ``read_form`` is how the
admin panel and the workspace read every form, and it refuses any field
that is not text. Query strings, paths, the API's upload fields and headers
are decoded as UTF-8 with replacement (or Latin-1) and cannot hold one.
"""

from __future__ import annotations

import json
import re
from array import array
from itertools import accumulate
from typing import Any

from starlette.datastructures import FormData
from starlette.requests import Request

from transcriber_app.web.errors import ApiError

#: How deep arrays and objects may nest: our own bodies are 1 to 3 deep, a Telegram update
#: about 8 (a message in a reply, its entities, a button row in a keyboard).
MAX_DEPTH = 32
#: The stable code of a body nested past ``MAX_DEPTH``.
TOO_DEEP = "too_deep"
#: The stable code of a body that is not Unicode text: bytes that are not UTF-8, or an
#: escape of half a surrogate pair (``"\ud800"``) that names no character.
BAD_UNICODE = "bad_unicode"

#: What ``decode_json`` refuses with, on every route that takes a JSON body.
JSON_REFUSALS = (BAD_UNICODE, TOO_DEEP)

#: A JSON string, escapes and all: the unrolled loop, then its closing quote or the end of
#: the text. A match from every quote, so an unterminated string is not searched again from
#: each quote inside it (``"`` and 16,000 ``\\"`` took 6 s that way: quadratic).
JSON_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*\\?(?:"|\Z)', re.DOTALL)
#: Every byte that is not a bracket: dropped once strings are gone.
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")
#: A bracket's step in depth, as a signed byte (255 is -1).
_STEPS = bytes.maketrans(b"[{]}", bytes([1, 1, 255, 255]))
#: Brackets summed at a time: a slice's sums are a list, and a deep body stops after one.
_SLICE = 64 * 1024
#: An escape of a surrogate code point; only a body with one needs its strings looked at.
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")
#: A surrogate code point: in a decoded string, half a pair that names no character.
_SURROGATE = re.compile("[\ud800-\udfff]")
#: What a refused lone surrogate is told.
_LONE_SURROGATE = "a string holds half a surrogate pair (such as \\ud800), not a character"


class JsonRefused(ValueError):  # noqa: N818 - named for its HTTP codes
    """A body that is JSON by grammar but refused here; ``code`` is stable for clients."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def decode_json(body: bytes) -> Any:
    """The JSON value of ``body``.

    Raises ``JsonRefused`` (``too_deep``, ``bad_unicode``) for a body refused
    by the rules above, and ``ValueError`` for one that is not JSON at all.
    """
    try:
        # A byte order mark is not JSON's, but RFC 8259 lets a reader ignore it, as json did.
        text = body.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError:
        raise JsonRefused(BAD_UNICODE, "the body is not UTF-8 text") from None
    if depth(text, past=MAX_DEPTH) > MAX_DEPTH:
        raise JsonRefused(TOO_DEEP, f"arrays and objects nest more than {MAX_DEPTH} deep")
    value = json.loads(text, parse_constant=_not_json)
    # Strict UTF-8 never decodes a surrogate: only an escape in the text can make one.
    if _SURROGATE_ESCAPE.search(text) and holds_lone_surrogate(value):
        raise JsonRefused(BAD_UNICODE, _LONE_SURROGATE)
    return value


def depth(text: str, *, past: int | None = None) -> int:
    """How deep arrays and objects nest in the JSON ``text``: a scan, whatever its depth.

    Strings go first (a bracket in one does not count); the brackets left
    are summed in C, a slice at a time. With ``past``, the scan stops at the
    first slice that goes deeper and answers that slice's depth: a body of
    nothing but ``[`` costs one slice. Exact for JSON; for text that is
    not, a guess that errs high, and that text is refused either way.
    """
    steps = array("b", JSON_STRING.sub("", text).encode().translate(_STEPS, _NOT_BRACKETS))
    level = deepest = 0
    for start in range(0, len(steps), _SLICE):
        sums = list(accumulate(steps[start : start + _SLICE], initial=level))
        deepest, level = max(deepest, *sums), sums[-1]
        if past is not None and deepest > past:
            break
    return deepest


def holds_lone_surrogate(value: Any) -> bool:
    """True when a string in ``value`` (keys too, of any depth) holds a surrogate code point."""
    # A list of what is left, not recursion: nothing here relies on a depth checked elsewhere.
    pending = [value]
    while pending:
        item = pending.pop()
        if isinstance(item, str):
            if _SURROGATE.search(item):
                return True
        elif isinstance(item, dict):
            pending.extend(item)
            pending.extend(item.values())
        elif isinstance(item, list | tuple):
            pending.extend(item)
    return False


async def read_form(request: Request, *, max_fields: int) -> FormData:
    """The posted form, no files, at most ``max_fields`` fields; 400 ``bad_unicode`` unless text.

    Whatever ``charset`` a multipart form names, a field that decoded to a
    lone surrogate is refused here, before any handler sees it.
    """
    form = await request.form(max_files=0, max_fields=max_fields)
    if holds_lone_surrogate([item for pair in form.multi_items() for item in pair]):
        raise ApiError(400, BAD_UNICODE, "a field of the form is not Unicode text")
    return form


def _not_json(constant: str) -> Any:
    raise ValueError(f"{constant} is not JSON")
