"""The API's bearer tokens and the job dedup key an ``Idempotency-Key`` makes (ADR 21, 36)."""

from __future__ import annotations

import hashlib
import hmac
import re

from starlette.requests import Request

from transcriber_app.web.errors import ApiError
from transcriber_app.web.state import runtime_of

#: What an ``Idempotency-Key`` may hold: visible ASCII, no spaces.
_IDEMPOTENCY_KEY = re.compile(r"[\x21-\x7e]{1,255}")


def require_token(request: Request) -> str | None:
    """401 unless the request carries one of ``[http] api_tokens``; open when there are none.

    Every configured token is compared, each in constant time, so the answer
    does not reveal how much of a token was right, nor which one. Returns the
    SHA-256 (hex) of the matching token, None when the API is open: the job
    owner a new job is stored with, and the caller ``reachable_by`` checks
    (ADR 36). The token itself is never stored.
    """
    tokens = runtime_of(request).config.http.api_tokens
    if not tokens:
        return None
    scheme, _, given = request.headers.get("authorization", "").partition(" ")
    offered = given.strip().encode()
    matched = None
    for token in tokens:
        if hmac.compare_digest(offered, token.encode()):
            matched = token
    if scheme.lower() != "bearer" or matched is None:
        raise ApiError(
            401,
            "unauthorized",
            "a valid bearer token is required",
            headers={"WWW-Authenticate": "Bearer"},
        )
    return hashlib.sha256(matched.encode()).hexdigest()


def dedup_key_of(request: Request, caller: str | None) -> str | None:
    """The job dedup key for the request's ``Idempotency-Key``; None without one.

    Scoped by a fingerprint of the caller's token (the first 16 digits of its
    hash, as since ADR 21): a key another client happened to use must not
    hand this one the other's job id (a job id is a capability).
    """
    key = request.headers.get("idempotency-key")
    if key is None:
        return None
    if not _IDEMPOTENCY_KEY.fullmatch(key):
        raise ApiError(
            400,
            "bad_idempotency_key",
            "Idempotency-Key must be 1 to 255 visible ASCII characters",
        )
    return f"http:{(caller or '')[:16]}:{key}"
