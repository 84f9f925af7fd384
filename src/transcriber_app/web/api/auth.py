"""The API's bearer tokens and the job dedup key an ``Idempotency-Key`` makes (ADR 21, 36)."""

from __future__ import annotations

import hashlib
import hmac
import re

from starlette.requests import Request

from transcriber_app.web.errors import ApiError
from transcriber_app.web.state import runtime_of
from transcriber_core.people import PERSON_OWNER_PREFIX, PERSON_TOKEN_PREFIX

#: What an ``Idempotency-Key`` may hold: visible ASCII, no spaces.
_IDEMPOTENCY_KEY = re.compile(r"[\x21-\x7e]{1,255}")


async def require_token(request: Request) -> str | None:
    """401 unless the request carries one of ``[http] api_tokens`` or a person's token.

    Every configured token is compared, each in constant time, so the answer
    does not reveal how much of a token was right, nor which one. Returns the
    SHA-256 (hex) of the matching token, None when the API is open: the job
    owner a new job is stored with, and the caller ``reachable_by`` checks
    (ADR 36). The token itself is never stored. A bearer token with a
    person's prefix that no static token equals is looked up by its SHA-256
    in the people store: an active person's gives their owner key
    (``person:…``, ADR 55); any other is refused, even on an open API, so a
    revoked token or a disabled person's stops at once.
    """
    runtime = runtime_of(request)
    tokens = runtime.config.http.api_tokens
    scheme, _, given = request.headers.get("authorization", "").partition(" ")
    offered = given.strip().encode()
    matched = None
    for token in tokens:
        if hmac.compare_digest(offered, token.encode()):
            matched = token
    bearer = scheme.lower() == "bearer"
    if bearer and matched is None and offered.startswith(PERSON_TOKEN_PREFIX.encode()):
        person = await runtime.people.person_for_token(hashlib.sha256(offered).hexdigest())
        if person is None:
            raise _unauthorized()
        return person.owner_key
    if not tokens:
        return None
    if not bearer or matched is None:
        raise _unauthorized()
    return hashlib.sha256(matched.encode()).hexdigest()


def _unauthorized() -> ApiError:
    return ApiError(
        401,
        "unauthorized",
        "a valid bearer token is required",
        headers={"WWW-Authenticate": "Bearer"},
    )


def dedup_key_of(request: Request, caller: str | None) -> str | None:
    """The job dedup key for the request's ``Idempotency-Key``; None without one.

    Scoped by a fingerprint of the caller's token (the first 16 digits of its
    hash, as since ADR 21): a key another client happened to use must not
    hand this one the other's job id (a job id is a capability). A person's
    key is used whole: the first 16 characters of two people's keys differ
    only in 9 random digits (ADR 55).
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
    scope = caller if caller and caller.startswith(PERSON_OWNER_PREFIX) else (caller or "")[:16]
    return f"http:{scope}:{key}"
