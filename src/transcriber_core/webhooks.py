"""Webhooks without I/O: which callback URLs and addresses are refused, the body, the signature.

The sender adapter resolves names and sends; everything it decides is here,
pure, so the rules are unit-tested once (ADR 35). Reasons are our own words
and never repeat the URL: its query string may carry a secret.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import json
from urllib.parse import SplitResult, urlsplit

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

#: Special-purpose ranges refused before ``is_global`` is asked: Python's table (3.11)
#: calls several of them global. NAT64 prefixes embed an IPv4 address a NAT64 gateway
#: reaches (``64:ff9b::a9fe:a9fe`` is the metadata address), ``::/8`` holds the
#: IPv4-compatible forms; the rest are documentation, benchmarking, discard, SRv6,
#: site-local and IETF assignments (the IANA special-purpose registries).
_RESERVED = tuple(
    ipaddress.ip_network(network)
    for network in (
        "0.0.0.0/8",
        "192.0.0.0/24",
        "198.18.0.0/15",
        "::/8",
        "64:ff9b::/96",
        "64:ff9b:1::/48",
        "100::/64",
        "2001::/23",
        "2001:db8::/32",
        "3fff::/20",
        "5f00::/16",
        "fec0::/10",
    )
)
#: The only IPv6 space with receivers on the Internet: global unicast.
_GLOBAL_UNICAST = ipaddress.ip_network("2000::/3")


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


def address_refusal(address: str, *, allow_private: bool) -> str | None:
    """Why a callback may not connect to ``address``; None when it may.

    Refused unless ``allow_private``: loopback, private, link-local,
    shared (carrier-grade NAT), reserved (``_RESERVED``, checked first: NAT64,
    ``::/8``), multicast and unspecified addresses, an IPv6 address that maps
    or embeds one of those, IPv6 outside global unicast, and anything else
    that is not globally routable. Never allowed, whatever
    the setting: unspecified and multicast addresses (no receiver lives there).
    """
    try:
        ip = ipaddress.ip_address(address.split("%", 1)[0])
    except ValueError:
        return "the callback's host resolved to something that is not an address"
    if isinstance(ip, ipaddress.IPv6Address):
        embedded = ip.ipv4_mapped or ip.sixtofour or (ip.teredo[1] if ip.teredo else None)
        if embedded is not None:
            ip = embedded
    if ip.is_unspecified or ip.is_multicast:
        return "the callback's host resolves to an address nothing can be sent to"
    return None if allow_private else _not_public(ip)


def _not_public(ip: ipaddress.IPv4Address | ipaddress.IPv6Address) -> str | None:
    """Why ``ip`` is no address on the Internet; None when it is one."""
    if any(ip in network for network in _RESERVED if network.version == ip.version):
        return "the callback's host resolves to a reserved address"
    if ip.is_global and (ip.version == 4 or ip in _GLOBAL_UNICAST):
        return None
    if ip.is_loopback:
        return "the callback's host resolves to a loopback address"
    if ip.is_link_local:
        return "the callback's host resolves to a link-local address"
    return "the callback's host resolves to a private or reserved address"


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
