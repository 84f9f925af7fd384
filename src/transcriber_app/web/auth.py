"""Signing in: the owner's setup link, password hashes, who is asking, the sign-in's back-off.

See docs/admin.md. The owner is a person with the owner's role (ADR 76),
signing in at the one door as everyone does. While no owner exists, each start makes a random setup
token valid for 30 minutes, held only in this process's memory, and logs the link once;
a restart makes a new one, and once the owner exists no link is ever made.
The owner's password is stored only as an argon2id hash (argon2-cffi's
defaults: 64 MiB, 3 passes), computed and checked in a thread because it is
slow on purpose.

Password checks are slowed per client by a back-off kept in the login throttle,
so every process on the database sees it (ADR 17): each wrong password
doubles the client's wait, up to a minute; the right one clears it. The
client is the peer address, or, from a proxy named in ``[http]
forwarded_allow_ips``, the address that proxy appended to
``X-Forwarded-For``. Sessions themselves are in ``sessions.py``.
"""

from __future__ import annotations

import asyncio
import hmac
import ipaddress
import logging
import re
import secrets
from collections.abc import Sequence
from datetime import datetime, timedelta
from urllib.parse import quote

import attrs
from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError
from starlette.requests import Request

from transcriber_app.bootstrap import Runtime
from transcriber_app.web.language import _
from transcriber_core.policy import (
    DEFAULT_ACCESS,
    AccessSettings,
    login_backoff,
    login_failed,
    login_wait,
)
from transcriber_core.ports import LoginThrottle, PeopleStore

log = logging.getLogger("transcriber.admin")

#: How long the setup link printed at startup stays valid (reference: Admin panel).
SETUP_LINK_LIFETIME = timedelta(minutes=30)
#: The shortest password the setup form takes.
MIN_PASSWORD_LENGTH = 12
#: The longest; hashing megabytes of "password" would be a cheap way to burn CPU.
MAX_PASSWORD_LENGTH = 1024

_hasher = PasswordHasher()
#: Hashes computed at once: each takes 64 MiB and a thread, so a burst of
#: logins must queue instead of growing the server by 64 MiB a request.
_hashing = asyncio.Semaphore(2)


async def hash_password(password: str) -> str:
    """The argon2id hash of ``password`` in its encoded form (salt and costs inside)."""
    async with _hashing:
        return await asyncio.to_thread(_hasher.hash, password)


async def verify_password(password_hash: str, password: str) -> bool:
    """True when ``password`` matches ``password_hash``; False for a mismatch or a broken hash."""
    try:
        async with _hashing:
            return await asyncio.to_thread(_hasher.verify, password_hash, password)
    except (VerificationError, InvalidHashError):
        return False


def password_problem(password: str, confirm: str) -> str | None:
    """Why a new password is refused, in words for the owner; None when it is fine."""
    if len(password) < MIN_PASSWORD_LENGTH:
        return _("The password must have at least %(count)s characters.", count=MIN_PASSWORD_LENGTH)
    if len(password) > MAX_PASSWORD_LENGTH:
        return _("The password must have at most %(count)s characters.", count=MAX_PASSWORD_LENGTH)
    if "\x00" in password:
        return _("The password must not contain a NUL character.")
    if not hmac.compare_digest(password.encode(), confirm.encode()):
        return _("The two passwords differ.")
    return None


# -- password reset from the command line (transcriber owner reset-password) -------------

#: Starts the secret a reset link stands for; no password a form takes begins with it.
RESET_PREFIX = "\x00reset\x00"


def reset_url(host: str, port: int, token: str) -> str:
    """The reset page's address on the service's own listener."""
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}/admin/reset?token={quote(token, safe='')}"


async def start_reset(people: PeopleStore, now: datetime) -> str | None:
    """Replace the owner's password with a one-time link's secret; the link's token.

    The stored hash becomes that of the link's secret, so the old password
    stops working and every session of the owner's ends at once (``set_password``); the
    token carries its expiry, ``SETUP_LINK_LIFETIME`` from ``now``. None
    when no owner exists (the startup setup link is the way then).
    """
    expires = int((now + SETUP_LINK_LIFETIME).timestamp())
    token = f"{expires}.{secrets.token_urlsafe(32)}"
    owner = await people.find_owner()
    if owner is None:
        return None
    if not await people.set_password(owner.id, await hash_password(RESET_PREFIX + token)):
        return None
    return token


#: The expiry that starts a reset link's token: Unix seconds, ASCII digits.
_RESET_EXPIRES = re.compile(r"[0-9]{1,12}")


async def reset_accepts(people: PeopleStore, token: str, now: datetime) -> bool:
    """True for the token of the last reset, before it expires and before a new password."""
    expires, _, rest = token.partition(".")
    # ASCII digits of a sane length: isdigit() takes "²" and int() refuses 4,301 digits (500s).
    if not _RESET_EXPIRES.fullmatch(expires) or not rest or now.timestamp() >= int(expires):
        return False
    owner = await people.find_owner()
    password_hash = None if owner is None else owner.password_hash
    return password_hash is not None and await verify_password(password_hash, RESET_PREFIX + token)


@attrs.frozen(kw_only=True)
class SetupLink:
    """The one-time token that lets whoever reads the startup log create the owner."""

    token: str = attrs.field(repr=False)
    #: The link is refused from this moment on.
    expires: datetime

    @classmethod
    def new(cls, now: datetime) -> SetupLink:
        """A fresh random token valid for ``SETUP_LINK_LIFETIME`` from ``now``."""
        return cls(token=secrets.token_urlsafe(32), expires=now + SETUP_LINK_LIFETIME)

    def accepts(self, token: str, now: datetime) -> bool:
        """True for this link's token before it expires; compared in constant time."""
        return now < self.expires and hmac.compare_digest(token.encode(), self.token.encode())


def setup_url(host: str, port: int, token: str) -> str:
    """The setup page's address on the service's own listener."""
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}/admin/setup?token={quote(token, safe='')}"


#: An IP network as ``ipaddress.ip_network`` makes it.
Network = ipaddress.IPv4Network | ipaddress.IPv6Network
#: How many addresses of an IPv6 client count as one: a /64 is what one host is usually given.
IPV6_CLIENT_PREFIX = 64


def client_address(
    peer: str | None, forwarded_for: Sequence[str], trusted: Sequence[Network]
) -> str:
    """The address of whoever is asking, as the login back-off counts it.

    The peer, unless the peer is a trusted proxy: then ``X-Forwarded-For``
    is read from its right end (each proxy appends the address it heard
    from) and the first hop that is not itself trusted is the client. What
    a client writes into the header itself sits to the left of that and is
    never reached. A hop that is not an address stops the walk at the last
    trusted one. IPv6 clients count by their /64.
    """
    if peer is None:
        return "unknown"
    client = _address(peer)
    if client is None or not _trusted(client, trusted):
        return _bucket(client) if client is not None else peer
    hops = [hop.strip() for header in forwarded_for for hop in header.split(",")]
    for hop in reversed(hops):
        address = _address(hop)
        if address is None:
            break
        client = address
        if not _trusted(address, trusted):
            break
    return _bucket(client)


def _address(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        address = ipaddress.ip_address(text)
    except ValueError:
        return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


def _trusted(
    address: ipaddress.IPv4Address | ipaddress.IPv6Address, trusted: Sequence[Network]
) -> bool:
    return any(address in network for network in trusted)


def _bucket(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> str:
    if isinstance(address, ipaddress.IPv6Address):
        return str(ipaddress.ip_network(f"{address}/{IPV6_CLIENT_PREFIX}", strict=False))
    return str(address)


def requester(request: Request) -> str:
    """Who is asking, for the login back-off: the peer, or who a trusted proxy says it is.

    Shared by every password form: one client, one back-off.
    """
    peer = request.client.host if request.client else None
    forwarded = request.headers.getlist("x-forwarded-for")
    admin: AdminState = request.app.state.admin
    return client_address(peer, forwarded, admin.trusted_proxies)


def safe_next(target: object, prefixes: Sequence[str]) -> str | None:
    """Where to go after a login: a path under one of ``prefixes``, never another site; or None."""
    if (
        isinstance(target, str)
        and any(target.startswith(f"{prefix}/") for prefix in prefixes)
        and not target.startswith("//")
        and "\\" not in target
        and all(32 < ord(char) < 127 for char in target)
    ):
        return target
    return None


def trusted_networks(entries: Sequence[str]) -> tuple[Network, ...]:
    """The proxies of ``[http] forwarded_allow_ips`` as networks (the config checked them)."""
    return tuple(ipaddress.ip_network(entry, strict=False) for entry in entries)


async def claim_attempt(
    logins: LoginThrottle, client: str, now: datetime, settings: AccessSettings
) -> timedelta | None:
    """Count a password attempt from ``client`` before it is checked; the wait when it may not.

    The attempt is stored as a failure first (a right password clears it),
    with a compare-and-set on what was read: of parallel guesses only one
    gets through, the rest are told to wait like any guess within the wait.
    """
    seen = await logins.get_login_failures(client)
    wait = login_wait(seen, now, settings)
    if wait is not None:
        return wait
    counted = login_failed(client, seen, now, settings)
    if not await logins.save_login_failures(counted, previous=seen):
        return login_backoff(1, settings)
    await logins.forget_login_failures(before=now - settings.login_forget)
    return None


@attrs.define(kw_only=True)
class AdminState:
    """What the admin panel holds for the life of the process: nothing that must be shared."""

    #: The setup link while no owner exists; None once used, or when an owner existed at start.
    setup: SetupLink | None = None
    #: Proxies whose ``X-Forwarded-For`` names the client (``[http] forwarded_allow_ips``).
    trusted_proxies: tuple[Network, ...] = ()
    #: Session lifetimes and the login back-off.
    access: AccessSettings = DEFAULT_ACCESS


async def prepare_admin(runtime: Runtime) -> AdminState:
    """Sweep what expired while stopped and, while no owner exists, make and log the setup link.

    Called once at startup before the port opens. The link goes to the log
    (stderr) once; when an owner exists nothing is made and nothing logged.
    """
    now = runtime.services.clock.now()
    state = AdminState(trusted_proxies=trusted_networks(runtime.config.http.forwarded_allow_ips))
    await runtime.people.delete_expired_person_sessions(now=now)
    await runtime.logins.forget_login_failures(before=now - state.access.login_forget)
    if await runtime.people.find_owner() is None:
        state.setup = SetupLink.new(now)
        http = runtime.config.http
        log.info(
            "admin.setup_link",
            extra={
                "url": setup_url(http.host, http.port, state.setup.token),
                "expires": state.setup.expires.isoformat(timespec="seconds"),
            },
        )
    return state
