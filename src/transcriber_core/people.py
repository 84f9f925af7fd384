"""The people of the service: accounts of their own, one-time invites, API tokens, sessions.

The owner is a person with the owner's role (ADR 76): one table, one
sign-in, one kind of session; the role alone opens the admin panel. The
owner invites the others by a one-time
link; the person sets a password with it, signs in to the workspace pages
(``/w/``) and makes API tokens whose jobs belong to them. Every job a
person sends is stored with the owner key ``person_owner(id)``, which can
never equal the SHA-256 hex digest that keys a static ``[http] api_tokens``
token (a hex digest has no colon). Both are 64 characters: the jobs table
has checked that width since SQLite's 0011, and a SQLite CHECK cannot be
loosened without rebuilding the table, so a person's id is 57 characters.
"""

from __future__ import annotations

import hashlib
import re
from datetime import datetime, timedelta
from enum import StrEnum

import attrs

from transcriber_core.entities import SessionLogin

#: What starts a person's owner key; a static token's key is 64 hex digits and has no colon.
PERSON_OWNER_PREFIX = "person:"
#: A person's id is this long, so that ``person_owner(id)`` is 64 characters, as a digest is.
PERSON_ID_LENGTH = 64 - len(PERSON_OWNER_PREFIX)
#: What a person's id is made of: lowercase hex digits (the app makes 57 random ones).
_PERSON_ID = re.compile(rf"[0-9a-f]{{{PERSON_ID_LENGTH}}}")
#: What starts every person's API token, so ``/api`` knows to look it up in the store.
PERSON_TOKEN_PREFIX = "tsp_"  # noqa: S105 - a prefix, not a secret
#: How long an invite link stays usable, counted on the store's clock.
INVITE_LIFETIME = timedelta(days=7)
#: How long a Telegram link code works (ADR 60), counted on the store's clock.
LINK_CODE_LIFETIME = timedelta(minutes=10)
#: What a link code is made of: no 0/O, 1/I/L, so it is read off a screen and typed without doubt.
LINK_CODE_ALPHABET = "ABCDEFGHJKMNPQRSTUVWXYZ23456789"
#: Characters of a link code: about 40 bits, against a code that lives minutes and is used once.
LINK_CODE_LENGTH = 8
#: What a person's name (their sign-in name) may hold: short, plain, case kept.
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@-]{0,63}")
#: The longest label a token may carry.
MAX_TOKEN_LABEL = 80
#: The most live tokens one person may hold.
MAX_TOKENS_PER_PERSON = 20


def person_owner(person_id: str) -> str:
    """The owner key a person's jobs are stored with: ``person:`` and the person's id."""
    return PERSON_OWNER_PREFIX + person_id


def is_person_owner(owner: str | None) -> bool:
    """True when ``owner`` is a person's key (``person:…``): such a job is that person's alone."""
    return owner is not None and owner.startswith(PERSON_OWNER_PREFIX)


def _check_id(_instance: object, _attribute: object, value: str) -> None:
    if not _PERSON_ID.fullmatch(value):
        raise ValueError(f"a person's id is {PERSON_ID_LENGTH} lowercase hex digits")


def name_problem(name: str) -> str | None:
    """Why a new person's name is refused, in words for the owner; None when it is fine."""
    if not _NAME.fullmatch(name):
        return (
            "A name is 1 to 64 letters, digits, dots, dashes, underscores or @,"
            " starting with a letter or digit."
        )
    return None


def link_code_of(text: str) -> str | None:
    """The link code typed in ``text`` (case, blanks and dashes forgiven); None if it is none.

    ``/link abcd-2345`` and ``/link ABCD2345`` name one code: what the store
    looks up is the hash of this normal form.
    """
    code = "".join(text.split()).replace("-", "").upper()
    if len(code) != LINK_CODE_LENGTH or any(c not in LINK_CODE_ALPHABET for c in code):
        return None
    return code


def link_code_hash(code: str) -> str:
    """What the store keeps and looks a link code up by: SHA-256 (hex) of its normal form."""
    return hashlib.sha256(code.encode()).hexdigest()


def token_label_problem(label: str) -> str | None:
    """Why a new token's label is refused, in words for the person; None when it is fine."""
    if not label.strip():
        return "Give the token a label, such as the machine or script that uses it."
    if len(label) > MAX_TOKEN_LABEL or not label.isprintable():
        return f"A label is at most {MAX_TOKEN_LABEL} printable characters."
    return None


class Role(StrEnum):
    """What a person may open: their own recordings, or the admin panel too."""

    #: Someone the owner invited: their own workspace.
    PERSON = "person"
    #: The one who runs the service (set up by the startup link): the admin panel and a workspace.
    OWNER = "owner"


#: The owner's name when the account was made before owners had names (ADR 76).
FIRST_OWNER_NAME = "owner"


@attrs.frozen(kw_only=True)
class Person:
    """Someone who signs in: their name, role, password hash and whether they may still sign in."""

    #: Random id of ``PERSON_ID_LENGTH`` hex digits; the person's owner key is ``person_owner(id)``.
    id: str = attrs.field(validator=_check_id)
    #: The sign-in name the owner chose; unique in the store.
    name: str
    #: The argon2id hash of the person's password; None until the invite is used.
    password_hash: str | None = attrs.field(default=None, repr=False)
    #: When the owner made the invite.
    created: datetime
    #: When the owner disabled the person; from then on no session or token of theirs works.
    disabled: datetime | None = None
    #: The owner's role opens the admin panel; a store holds at most one owner.
    role: Role = Role.PERSON
    #: The language the person chose for the pages (``ru``, ``en``); None: their browser's.
    language: str | None = None

    @property
    def is_owner(self) -> bool:
        """True for the owner."""
        return self.role is Role.OWNER

    @property
    def owner_key(self) -> str:
        """The owner key of this person's jobs."""
        return person_owner(self.id)

    @property
    def is_active(self) -> bool:
        """True once the password is set and while the person is not disabled."""
        return self.password_hash is not None and self.disabled is None


@attrs.frozen(kw_only=True)
class Invite:
    """A one-time link's record: whose it is and until when it works."""

    #: SHA-256 (hex) of the link's random secret; the link itself is never stored.
    token_hash: str = attrs.field(repr=False)
    #: The person the link lets set a password.
    person_id: str
    #: The store's time from which the link is refused.
    expires: datetime


@attrs.frozen(kw_only=True)
class PersonToken:
    """A person's API token as the store keeps it: its hash, never the token."""

    #: A short random id the tokens page shows and revokes by; not a secret.
    id: str
    #: SHA-256 (hex) of the token; what a bearer header is looked up by.
    token_hash: str = attrs.field(repr=False)
    #: Whose jobs the token makes.
    person_id: str
    #: What the person called it ("laptop", "script").
    label: str
    #: When it was made.
    created: datetime


@attrs.frozen(kw_only=True)
class PersonSession:
    """One sign-in of a person to the workspace: whose, and the login record (ADR 17's shape)."""

    #: Who signed in.
    person_id: str
    #: The cookie's hash, CSRF token, times and flash.
    login: SessionLogin


@attrs.frozen(kw_only=True)
class LinkCode:
    """A one-time code that links a Telegram chat to a person (ADR 60): its hash, never the code."""

    #: SHA-256 (hex) of the code's normal form (``link_code_of``).
    code_hash: str = attrs.field(repr=False)
    #: Whose chat it links.
    person_id: str
    #: The store's time from which the code is refused.
    expires: datetime


@attrs.frozen(kw_only=True)
class LinkedChat:
    """A Telegram chat whose new recordings belong to a person (ADR 60)."""

    #: The private chat's id: the Telegram user who linked it.
    chat_id: int
    #: Whose recordings they are.
    person_id: str
    #: When the code was used, on the store's clock.
    linked: datetime
