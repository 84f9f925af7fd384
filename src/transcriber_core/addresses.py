"""Which network addresses the service may connect to on someone's say-so (SPEC §15, §17, §28).

One rule for every connection a sender's URL makes us open: a webhook's
callback (``webhooks``) and every connection of a link's fetch (the media
fetcher's guard, ADR 87). Only public addresses pass; ``allow_private``
(for tests and trusted networks) lets private ones through. Reasons are our
own words and never name the address or the URL.
"""

from __future__ import annotations

import ipaddress

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


def address_refusal(address: str, *, allow_private: bool) -> str | None:
    """Why nothing of ours may connect to ``address``; None when it may.

    Refused unless ``allow_private``: loopback, private, link-local,
    shared (carrier-grade NAT), reserved (``_RESERVED``, checked first: NAT64,
    ``::/8``), multicast and unspecified addresses, an IPv6 address that maps
    or embeds one of those, IPv6 outside global unicast, and anything else
    that is not globally routable. Never allowed, whatever
    the setting: unspecified and multicast addresses (no server lives there).
    """
    try:
        ip = ipaddress.ip_address(address.split("%", 1)[0])
    except ValueError:
        return "the host resolved to something that is not an address"
    if isinstance(ip, ipaddress.IPv6Address):
        embedded = ip.ipv4_mapped or ip.sixtofour or (ip.teredo[1] if ip.teredo else None)
        if embedded is not None:
            ip = embedded
    if ip.is_unspecified or ip.is_multicast:
        return "the host resolves to an address nothing can be sent to"
    return None if allow_private else _not_public(ip)


def _not_public(ip: ipaddress.IPv4Address | ipaddress.IPv6Address) -> str | None:
    """Why ``ip`` is no address on the Internet; None when it is one."""
    if any(ip in network for network in _RESERVED if network.version == ip.version):
        return "the host resolves to a reserved address"
    if ip.is_global and (ip.version == 4 or ip in _GLOBAL_UNICAST):
        return None
    if ip.is_loopback:
        return "the host resolves to a loopback address"
    if ip.is_link_local:
        return "the host resolves to a link-local address"
    return "the host resolves to a private or reserved address"
