"""Webhooks without I/O: which callback URLs are refused, the body, the signature.

The sender adapter resolves names and sends; everything it decides is here,
pure, so the rules are unit-tested once (ADR 35). Which addresses may be
called is ``transcriber_core.addresses``, the rule a link's fetch keeps too.
Reasons are our own words and never repeat the URL: its query string may
carry a secret.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from urllib.parse import SplitResult, urlsplit

from transcriber_core.addresses import address_refusal
from transcriber_core.entities import Event, Job
from transcriber_core.errors import CallbackRefused

#: Longest callback URL accepted, in characters.
MAX_URL_LENGTH = 2048
#: The header that carries the signature.
SIGNATURE_HEADER = "Transcriber-Signature"
#: Stable codes of a refused callback (HTTP 400 at intake).
BAD_URL = "bad_callback_url"
REFUSED_ADDRESS = "callback_address_refused"

_SCHEMES = frozenset({"http", "https"})


def parse_callback_url(url: str) -> SplitResult:
    """The parts of an acceptable callback URL; ``CallbackRefused`` (``BAD_URL``) says why not.

    Accepted: http or https, at most ``MAX_URL_LENGTH`` characters, a host,
    no user name or password, a valid port, no spaces or control characters.
    """
    if len(url) > MAX_URL_LENGTH:
        raise CallbackRefused(
            f"callback_url is longer than {MAX_URL_LENGTH} characters", code=BAD_URL
        )
    if any(ch.isspace() or ord(ch) < 0x20 or ord(ch) == 0x7F for ch in url):
        raise CallbackRefused("callback_url holds spaces or control characters", code=BAD_URL)
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        raise CallbackRefused("callback_url is not a valid URL", code=BAD_URL) from None
    if parts.scheme.lower() not in _SCHEMES:
        raise CallbackRefused("callback_url must be an http or https URL", code=BAD_URL)
    if parts.username is not None or parts.password is not None or "@" in parts.netloc:
        raise CallbackRefused("callback_url must not carry credentials", code=BAD_URL)
    if not parts.hostname:
        raise CallbackRefused("callback_url has no host", code=BAD_URL)
    if port == 0:
        raise CallbackRefused("callback_url has no valid port", code=BAD_URL)
    return parts


def check_addresses(addresses: list[str], *, allow_private: bool) -> None:
    """``CallbackRefused`` (``REFUSED_ADDRESS``) unless every address is allowed, and one exists.

    Every address must pass, not just one: a name that resolves to a public
    and a private address could be steered to the private one.
    """
    if not addresses:
        raise CallbackRefused("the callback's host does not resolve", code=REFUSED_ADDRESS)
    for address in addresses:
        reason = address_refusal(address, allow_private=allow_private)
        if reason is not None:
            raise CallbackRefused(reason, code=REFUSED_ADDRESS)


def body(job: Job, event: Event) -> bytes:
    """The JSON a receiver gets: ``{"job_id","state","error"}``, compact, UTF-8.

    ``state`` is the end the delivery was written for; ``error`` is the
    job's reason for failing, null when it has none or has moved on since.
    """
    error = job.error if job.state.value == event.value else None
    document = {"job_id": job.id, "state": event.value, "error": error}
    return json.dumps(document, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def signature(secret: str, timestamp: int, payload: bytes) -> str:
    """The ``Transcriber-Signature`` value: ``t=<unix seconds>,v1=<hex HMAC-SHA256>``.

    The HMAC is over ``"<t>.<body>"`` with the secret ``[webhooks] secret``,
    so a receiver can refuse both a forged body and an old one replayed.
    """
    mac = hmac.new(secret.encode("utf-8"), b"%d." % timestamp + payload, hashlib.sha256)
    return f"t={timestamp},v1={mac.hexdigest()}"


def receiver_of(url: str) -> str:
    """The receiver a callback URL calls: scheme, host and port, lower-cased (ADR 44).

    Tries to one receiver share its in-flight cap and its back-off, whatever
    their paths and queries.
    """
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    port = parts.port or (443 if scheme == "https" else 80)
    return f"{scheme}://{(parts.hostname or '').lower()}:{port}"


def receiver_pause(failures: int) -> float:
    """Seconds a receiver is not called after ``failures`` slow failures in a row (ADR 44).

    1 s, doubling, at most 60 s: long enough that a receiver which hangs
    holds a loop once per pause, short enough that one which recovers is
    called again within a minute.
    """
    return float(min(2 ** max(failures - 1, 0), 60))


def safe_target(url: str) -> str:
    """What of a callback URL a log may show: its host and path, never the query or user."""
    parts = urlsplit(url)
    return f"{parts.hostname or ''}{parts.path or '/'}"
