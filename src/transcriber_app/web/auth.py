"""The admin panel's owner account: setup link, password hashes, sessions, CSRF, login throttle.

SPEC §8. While no owner exists, each start makes a random setup token valid
for 30 minutes, held only in this process's memory, and logs the link once;
a restart makes a new one, and once the owner exists no link is ever made.
The owner's password is stored only as an argon2id hash (argon2-cffi's
defaults: 64 MiB, 3 passes), computed and checked in a thread because it is
slow on purpose.

Sessions are Starlette's signed cookies (``SessionMiddleware``, itsdangerous),
signed with a key that the owner store makes once and keeps, so logins
survive restarts and die with the database. The session holds only
"owner: true", the CSRF token and a one-shot flash message; no job data.
"""

from __future__ import annotations

import asyncio
import hmac
import logging
import secrets
from collections import deque
from collections.abc import MutableMapping
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import quote

import attrs
from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError

from transcriber_app.bootstrap import Runtime

log = logging.getLogger("transcriber.admin")

#: How long the setup link printed at startup stays valid (SPEC §8).
SETUP_LINK_LIFETIME = timedelta(minutes=30)
#: How long a login lasts; the cookie's signature carries its time.
SESSION_MAX_AGE = timedelta(days=7)
#: The session cookie's name; its path is ``/admin``, so the API never sees it.
SESSION_COOKIE = "transcriber_admin"
#: The owner store's name for the key that signs session cookies.
SESSION_SECRET_NAME = "session"  # noqa: S105 - the key's name, not the key
#: The shortest password the setup form takes.
MIN_PASSWORD_LENGTH = 12
#: The longest; hashing megabytes of "password" would be a cheap way to burn CPU.
MAX_PASSWORD_LENGTH = 1024
#: Name of the hidden field that carries the CSRF token in every form.
CSRF_FIELD = "csrf"

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
    """Why the setup form refuses this password, in words for the owner; None when it is fine."""
    if len(password) < MIN_PASSWORD_LENGTH:
        return f"The password must have at least {MIN_PASSWORD_LENGTH} characters."
    if len(password) > MAX_PASSWORD_LENGTH:
        return f"The password must have at most {MAX_PASSWORD_LENGTH} characters."
    if not hmac.compare_digest(password.encode(), confirm.encode()):
        return "The two passwords differ."
    return None


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


class LoginThrottle:
    """Refuses password checks from a client that failed too often lately.

    Per client address, in memory: ``max_failures`` wrong passwords within
    ``window`` make further attempts wait until the oldest of them leaves the
    window. Memory is bounded by dropping the oldest clients first.
    """

    def __init__(
        self,
        *,
        max_failures: int = 5,
        window: timedelta = timedelta(minutes=5),
        max_clients: int = 10_000,
    ) -> None:
        self.max_failures = max_failures
        self.window = window
        self.max_clients = max_clients
        self._failures: dict[str, deque[datetime]] = {}

    def retry_after(self, client: str, now: datetime) -> timedelta | None:
        """How long ``client`` must wait before its next attempt; None when it may try now."""
        failures = self._recent(client, now)
        if len(failures) < self.max_failures:
            return None
        return failures[0] + self.window - now

    def failed(self, client: str, now: datetime) -> None:
        """Count a wrong password from ``client``."""
        failures = self._recent(client, now)
        failures.append(now)
        self._failures[client] = failures
        while len(self._failures) > self.max_clients:
            del self._failures[next(iter(self._failures))]

    def succeeded(self, client: str) -> None:
        """Forget ``client``'s failures: the owner got in."""
        self._failures.pop(client, None)

    def _recent(self, client: str, now: datetime) -> deque[datetime]:
        failures = self._failures.pop(client, deque())
        while failures and failures[0] + self.window <= now:
            failures.popleft()
        if failures:
            self._failures[client] = failures
        return failures


@attrs.define(kw_only=True)
class AdminState:
    """What the admin panel holds in memory for the life of the process."""

    #: The key that signs session cookies.
    session_secret: bytes = attrs.field(repr=False)
    #: The setup link while no owner exists; None once used, or when an owner existed at start.
    setup: SetupLink | None = None
    throttle: LoginThrottle = attrs.field(factory=LoginThrottle)

    @classmethod
    def ephemeral(cls) -> AdminState:
        """State for an app built without ``prepare_admin``: sessions end with the process."""
        return cls(session_secret=secrets.token_bytes(32))


async def prepare_admin(runtime: Runtime) -> AdminState:
    """Load the session key and, while no owner exists, make and log the setup link.

    Called once at startup before the port opens. The link goes to the log
    (stderr) once; when an owner exists nothing is made and nothing logged.
    """
    owners = runtime.owners
    now = runtime.services.clock.now()
    secret = await owners.get_or_create_secret(
        SESSION_SECRET_NAME, secrets.token_bytes(32), now=now
    )
    state = AdminState(session_secret=secret)
    if await owners.get_owner_hash() is None:
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


# -- the session --------------------------------------------------------------

Session = MutableMapping[str, Any]


def is_owner(session: Session) -> bool:
    """True when this session logged in as the owner."""
    return session.get("owner") is True


def log_in(session: Session) -> None:
    """Make ``session`` the owner's, with a fresh CSRF token (nothing from before survives)."""
    session.clear()
    session["owner"] = True
    session[CSRF_FIELD] = secrets.token_urlsafe(32)


def log_out(session: Session) -> None:
    """Forget everything in ``session``; the middleware then expires the cookie."""
    session.clear()


def csrf_token(session: Session) -> str:
    """The session's CSRF token for a form, made on first use."""
    token = session.get(CSRF_FIELD)
    if not isinstance(token, str):
        token = secrets.token_urlsafe(32)
        session[CSRF_FIELD] = token
    return token


def csrf_ok(session: Session, submitted: object) -> bool:
    """True when a form's CSRF field equals the session's token; constant time."""
    expected = session.get(CSRF_FIELD)
    if not isinstance(expected, str) or not isinstance(submitted, str):
        return False
    return hmac.compare_digest(expected.encode(), submitted.encode())


def flash(session: Session, message: str) -> None:
    """Leave ``message`` for the next page this session sees."""
    session["flash"] = message


def take_flash(session: Session) -> str | None:
    """The message left by ``flash``, once."""
    message = session.pop("flash", None)
    return message if isinstance(message, str) else None
