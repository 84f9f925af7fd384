"""How stored files are named: nothing of the sender's but a clean extension."""

from __future__ import annotations

import base64
import hashlib
import re

_EXTENSION = re.compile(r"[a-z0-9]{1,10}")
#: What a job or file id may hold: URL-safe characters (RFC 3986 "unreserved"), 1 to 128.
_ID = re.compile(r"[A-Za-z0-9._~-]{1,128}")


def well_formed_id(text: str) -> bool:
    """True when ``text`` could be one of our ids; anything else is unknown without a lookup.

    Every id we make is URL-safe text; a NUL, another control character or
    non-ASCII cannot be one, and PostgreSQL refuses a NUL in text outright,
    so the edge answers 404 for those instead of asking the database.
    """
    return _ID.fullmatch(text) is not None


#: What a Telegram chat id written in a path may be: an optional minus and at most 19
#: digits (Telegram's ids have at most 52 significant bits; both databases keep 64).
_CHAT_ID = re.compile(r"-?[0-9]{1,19}")
#: The range of a chat id both databases store (a signed 64-bit integer).
_CHAT_ID_RANGE = range(-(2**63), 2**63)


def chat_id_of(text: str) -> int | None:
    """The Telegram chat id ``text`` writes, or None when it is not one a database can hold.

    A path's digits can name a number past 64 bits, which SQLite refuses
    with ``OverflowError`` and PostgreSQL with an error: such an id is
    unknown without a lookup, as ``well_formed_id`` makes other ids.
    """
    if not _CHAT_ID.fullmatch(text):
        return None
    value = int(text)
    return value if value in _CHAT_ID_RANGE else None


def extension_of(filename: str | None) -> str:
    """The extension of a sender's file name with its dot, lower-cased; "" if not clean.

    Only the text after the last dot survives, and only when it is 1 to 10
    ASCII letters or digits, so no other part of the name reaches storage.
    """
    if not filename or "." not in filename:
        return ""
    candidate = filename.rsplit(".", 1)[1].lower()
    return f".{candidate}" if _EXTENSION.fullmatch(candidate) else ""


def link_digest(url: str) -> str:
    """What stands for a link where an upload keeps its bytes' SHA-256 (an Idempotency-Key's).

    A hash of the link, prefixed so it never equals a file's digest: a key
    first used with a file and sent again with a link is a different recording.
    """
    return hashlib.sha256(b"link\x00" + url.encode()).hexdigest()


def derived_file_id(job_id: str, role: str) -> str:
    """The id of the file a step makes for a job, the same on every retry.

    A retried step overwrites its earlier output instead of adding a second
    file record (reference: queue rule 9). Unguessable as long as the job id is.
    """
    digest = hashlib.sha256(f"{job_id}\x00{role}".encode()).digest()[:16]
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


#: Between the holder and the unique rest of a part's acquisition id (ADR 61).
_HOLDER_END = "/"


def held_by(holder: str, unique: str) -> str:
    """An acquisition id that names its holder (a worker's host and process) before ``unique``.

    The id stays unique (``unique`` is), so it fences as any other; the admin
    page reads who holds a part from it (``holder_of``) with no column of its own.
    """
    return f"{holder}{_HOLDER_END}{unique}" if holder else unique


def holder_of(acquisition_id: str | None) -> str | None:
    """The holder an acquisition id names (``held_by``); None for none, or an unnamed lease."""
    if not acquisition_id or _HOLDER_END not in acquisition_id:
        return None
    return acquisition_id.rsplit(_HOLDER_END, 1)[0] or None
