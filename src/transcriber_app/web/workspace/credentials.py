"""The workspace's secrets: person ids, invite links' and tokens' random parts, and their hashes.

Every secret has 256 random bits and is kept only as its SHA-256 (a fast
hash is enough: nobody can search that space, and the lookup stays one
index probe, as for session ids, ADR 17). Passwords are the exception:
they are chosen by people, so they get argon2id (``web/auth.py``).
"""

from __future__ import annotations

import hashlib
import secrets

from transcriber_core.people import (
    LINK_CODE_ALPHABET,
    LINK_CODE_LENGTH,
    PERSON_ID_LENGTH,
    PERSON_TOKEN_PREFIX,
)


def digest(secret: str) -> str:
    """What the store keeps of an invite link or a token: its SHA-256 in hex."""
    return hashlib.sha256(secret.encode()).hexdigest()


def new_person_id() -> str:
    """A fresh person id: 57 random hex digits, so the owner key is 64 characters (ADR 55)."""
    return secrets.token_hex(32)[:PERSON_ID_LENGTH]


def new_api_token() -> str:
    """A fresh person's API token: the prefix ``/api`` recognises and 256 random bits."""
    return PERSON_TOKEN_PREFIX + secrets.token_urlsafe(32)


def new_token_id() -> str:
    """A short random id a token is listed and revoked by; not a secret."""
    return secrets.token_hex(6)


def new_link_code() -> str:
    """A fresh Telegram link code, shown as ``ABCD-2345``: short to type, used once (ADR 60)."""
    code = "".join(secrets.choice(LINK_CODE_ALPHABET) for _ in range(LINK_CODE_LENGTH))
    half = LINK_CODE_LENGTH // 2
    return f"{code[:half]}-{code[half:]}"
