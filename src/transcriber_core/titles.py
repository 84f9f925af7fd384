"""A recording's title (SPEC §26, ADR 79): the person's own name for it, checked once here.

A title is optional text of at most ``MAX_TITLE_CHARS`` characters, then trimmed,
without control characters; an empty one is no title. Without one, a page
shows a dated default in its viewer's language, made at display from the
job's ``created`` (``default_title``); nothing is stored for it. The bot
gives its recordings a title of its own, "Voice note of …" in the chat's
language, never the sender's file name. A title is
the person's words: it never reaches a log line, an error's text, a stored
file name or an object key.
"""

from __future__ import annotations

import unicodedata
from datetime import datetime

from transcriber_core.errors import OptionRefused

#: The longest title, in characters.
MAX_TITLE_CHARS = 200
#: The stable code of a refused title.
BAD_TITLE = "bad_title"
#: A default title, formatted with ``when``; a translator's catalog may word it otherwise.
RECORDING_OF = "Recording of {when}"


def clean_title(raw: str | None) -> str | None:
    """``raw`` as a title is stored: trimmed, None when empty; ``OptionRefused`` when refused.

    Refused: more than ``MAX_TITLE_CHARS`` characters as sent, or a
    control character (a line break, a NUL, a bidirectional override);
    the message never repeats the title.
    """
    if raw is None:
        return None
    # Counted as sent, as the API's schema says (``maxLength``): a form's box holds no more.
    if len(raw) > MAX_TITLE_CHARS:
        raise OptionRefused(
            f"a title has at most {MAX_TITLE_CHARS} characters", code=BAD_TITLE, field="title"
        )
    title = raw.strip()
    if not title:
        return None
    # Cc: controls (tabs and line breaks too: a title is one line); Cf: format characters
    # such as the bidirectional overrides that make a name read backwards.
    if any(unicodedata.category(c) in ("Cc", "Cf") for c in title):
        raise OptionRefused(
            "a title must not contain control or format characters", code=BAD_TITLE, field="title"
        )
    return title


def when_text(moment: datetime) -> str:
    """``5 Dec 2026, 09:44``: a default title's date, in English (UTC, as the pages show)."""
    return f"{moment.day} {moment:%b %Y, %H:%M}"


def default_title(created: datetime) -> str:
    """The title shown for a recording sent without one: "Recording of 5 Dec 2026, 09:44"."""
    return RECORDING_OF.format(when=when_text(created))


def shown_title(title: str | None, created: datetime) -> str:
    """``title``, or the dated default of a recording sent at ``created``."""
    return title if title is not None else default_title(created)
