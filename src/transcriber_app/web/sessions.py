"""Server-side admin sessions: the cookie holds a random id, the database holds the rest (ADR 17).

``transcriber_admin`` carries 256 random bits and nothing else. The owner
store keeps the SHA-256 of that id with the session's CSRF token, login
time, last-seen time, expiry and one-shot flash message. Logout deletes the
record, so every copy of the cookie is dead at once; a password change
deletes them all. Nothing is signed, so nothing secret is kept for signing.

Before login there is no record (a visitor must not be able to fill the
table by opening the login page). Its forms are protected by a second
cookie, ``transcriber_admin_form``, whose random value the form must repeat
(double submit): another site can neither read it nor set the field.

``ServerSessions`` wraps the panel: it loads the session before the route
runs, and when the answer starts it writes what the route changed (last
seen, flash) and adds the ``Set-Cookie`` headers.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from collections.abc import Callable
from datetime import datetime
from typing import Generic, Protocol, TypeVar

import attrs
from starlette.datastructures import MutableHeaders
from starlette.requests import Request
from starlette.types import Scope

from transcriber_app.web.middleware import AnswerHeaders
from transcriber_core.entities import OwnerSession
from transcriber_core.policy import AccessSettings, session_expiry, session_is_live, session_touched
from transcriber_core.ports import OwnerStore

#: The session cookie's name; its path is ``/admin``, so the API never sees it.
SESSION_COOKIE = "transcriber_admin"
#: The cookie that protects the forms shown before login (login, setup).
FORM_COOKIE = "transcriber_admin_form"
#: Where both cookies are sent.
COOKIE_PATH = "/admin"
#: Name of the hidden field that carries the CSRF token in every form.
CSRF_FIELD = "csrf"
#: What a cookie value made by ``secrets.token_urlsafe(32)`` looks like; anything else is ignored.
_TOKEN = re.compile(r"[A-Za-z0-9_-]{43}")
_SCOPE_KEY = "transcriber.admin_session"


def new_token() -> str:
    """A fresh random token: 256 bits, URL-safe, 43 characters."""
    return secrets.token_urlsafe(32)


def hash_id(session_id: str) -> str:
    """What the store keeps instead of the id: its SHA-256 in hex.

    The id has 256 random bits, so a fast unsalted hash is enough: nobody
    can search that space, and the lookup stays one index probe.
    """
    return hashlib.sha256(session_id.encode("ascii")).hexdigest()


#: A kind of session's record: the owner's ``OwnerSession``, or a person's ``PersonSession``.
R = TypeVar("R")


class SessionBook(Protocol[R]):
    """Where one kind of session lives: its cookies and its records in a store."""

    @property
    def session_cookie(self) -> str:
        """The session cookie's name."""
        ...

    @property
    def form_cookie(self) -> str:
        """The double-submit cookie of the forms shown before login."""
        ...

    @property
    def path(self) -> str:
        """The path both cookies are sent to."""
        ...

    def login_of(self, record: R) -> OwnerSession:
        """The login part of ``record``: id hash, CSRF token, times, flash."""
        ...

    def with_login(self, record: R, login: OwnerSession) -> R:
        """``record`` with its login replaced."""
        ...

    async def get(self, id_hash: str) -> R | None:
        """The record stored under ``id_hash``, live or not; None when there is none."""
        ...

    async def create(self, record: R) -> None:
        """Store a new record."""
        ...

    async def save(self, record: R) -> None:
        """Write the record's last-seen, expiry and flash."""
        ...

    async def delete(self, id_hash: str) -> None:
        """Delete the record stored under ``id_hash``."""
        ...

    async def delete_expired(self, now: datetime) -> None:
        """Delete every expired record."""
        ...


@attrs.define
class CookieSession(Generic[R]):
    """A server-side session as one request sees it: whose, and what to write back.

    The admin panel's and the workspace's sessions are this with their own
    ``SessionBook`` (cookies and store) and record type.
    """

    book: SessionBook[R]
    settings: AccessSettings
    now: datetime
    #: The live session, or None for a visitor who is not logged in.
    record: R | None = None
    #: The pre-login form token from the visitor's cookie, when it had a well-formed one.
    form_token: str | None = None
    #: ``Set-Cookie`` values to send with the answer.
    cookies: list[str] = attrs.field(factory=list)
    _dirty: bool = False

    async def _load(self, request: Request) -> None:
        """Read the request's cookies: a live session is touched, a dead one dropped."""
        book = self.book
        form_token = request.cookies.get(book.form_cookie, "")
        if _TOKEN.fullmatch(form_token):
            self.form_token = form_token
        session_id = request.cookies.get(book.session_cookie)
        if session_id is None:
            return
        record = await book.get(hash_id(session_id)) if _TOKEN.fullmatch(session_id) else None
        if record is None or not session_is_live(book.login_of(record), self.now):
            if record is not None:
                await book.delete(book.login_of(record).id_hash)
            self._set_cookie(book.session_cookie, "", max_age=0)
            return
        touched = session_touched(book.login_of(record), self.now, self.settings)
        self.record = record if touched is None else book.with_login(record, touched)
        self._dirty = touched is not None

    def _login(self) -> OwnerSession | None:
        return None if self.record is None else self.book.login_of(self.record)

    def csrf_token(self) -> str:
        """The token forms must carry: the session's, or before login the form cookie's."""
        login = self._login()
        if login is not None:
            return login.csrf
        if self.form_token is None:
            self.form_token = new_token()
            self._set_cookie(self.book.form_cookie, self.form_token, max_age=None)
        return self.form_token

    def csrf_ok(self, submitted: object) -> bool:
        """True when a form's CSRF field equals the expected token; constant time."""
        login = self._login()
        expected = login.csrf if login is not None else self.form_token
        if expected is None or not isinstance(submitted, str):
            return False
        return hmac.compare_digest(expected.encode(), submitted.encode())

    def flash(self, message: str) -> None:
        """Leave ``message`` for the next page this session sees (never a secret: it is stored)."""
        login = self._login()
        if self.record is not None and login is not None:
            self.record = self.book.with_login(self.record, attrs.evolve(login, flash=message))
            self._dirty = True

    def take_flash(self) -> str | None:
        """The message left by ``flash``, once."""
        login = self._login()
        if self.record is None or login is None or login.flash is None:
            return None
        self.record = self.book.with_login(self.record, attrs.evolve(login, flash=None))
        self._dirty = True
        return login.flash

    async def _start(self, record_of: Callable[[OwnerSession], R]) -> None:
        """Start a fresh session (new id, new CSRF token); end the one this request had.

        Expired sessions are swept here: a login is the only thing that adds a record.
        """
        login = self._login()
        if login is not None:
            await self.book.delete(login.id_hash)
        await self.book.delete_expired(self.now)
        session_id = new_token()
        self.record = record_of(
            OwnerSession(
                id_hash=hash_id(session_id),
                csrf=new_token(),
                created=self.now,
                last_seen=self.now,
                expires=session_expiry(self.now, self.now, self.settings),
            )
        )
        await self.book.create(self.record)
        self._dirty = False
        lifetime = int(self.settings.session_lifetime.total_seconds())
        self._set_cookie(self.book.session_cookie, session_id, max_age=lifetime)

    async def _end(self) -> None:
        """End this session in the store, for every copy of its cookie, and drop the cookie."""
        login = self._login()
        if login is not None:
            await self.book.delete(login.id_hash)
        self.record = None
        self._dirty = False
        self._set_cookie(self.book.session_cookie, "", max_age=0)

    async def save(self) -> None:
        """Write what this request changed; a session deleted meanwhile stays deleted."""
        if self.record is not None and self._dirty:
            self._dirty = False
            await self.book.save(self.record)

    def _set_cookie(self, name: str, value: str, *, max_age: int | None) -> None:
        """Send a ``Set-Cookie``: HttpOnly, SameSite=Lax, on the book's path.

        Not ``Secure``: the service speaks plain HTTP on 127.0.0.1, and a Secure
        cookie would never come back. Behind a TLS proxy this is the next change.
        """
        parts = [f"{name}={value}", f"Path={self.book.path}", "HttpOnly", "SameSite=Lax"]
        if max_age is not None:
            parts.append(f"Max-Age={max_age}")
        self.cookies.append("; ".join(parts))


@attrs.frozen
class _OwnerBook:
    """The owner's sessions: ``transcriber_admin`` on ``/admin``, in the owner store."""

    store: OwnerStore
    session_cookie: str = SESSION_COOKIE
    form_cookie: str = FORM_COOKIE
    path: str = COOKIE_PATH

    def login_of(self, record: OwnerSession) -> OwnerSession:
        return record

    def with_login(self, record: OwnerSession, login: OwnerSession) -> OwnerSession:
        return login

    async def get(self, id_hash: str) -> OwnerSession | None:
        return await self.store.get_session(id_hash)

    async def create(self, record: OwnerSession) -> None:
        await self.store.create_session(record)

    async def save(self, record: OwnerSession) -> None:
        await self.store.save_session(record)

    async def delete(self, id_hash: str) -> None:
        await self.store.delete_session(id_hash)

    async def delete_expired(self, now: datetime) -> None:
        await self.store.delete_expired_sessions(now=now)


@attrs.define
class AdminSession(CookieSession[OwnerSession]):
    """The admin session as one request sees it: the owner or a visitor."""

    @classmethod
    async def load(
        cls, request: Request, store: OwnerStore, settings: AccessSettings, now: datetime
    ) -> AdminSession:
        """The request's session from its cookies: live sessions are touched, dead ones dropped."""
        session = cls(book=_OwnerBook(store), settings=settings, now=now)
        await session._load(request)
        return session

    @property
    def is_owner(self) -> bool:
        """True when this request comes from a live owner session."""
        return self.record is not None

    async def log_in(self) -> None:
        """Start a fresh owner session; end the one this request had."""
        await self._start(lambda login: login)

    async def log_out(self) -> None:
        """End this session for every copy of its cookie, and drop the cookie."""
        await self._end()


def session_of(request: Request) -> AdminSession:
    """The session ``ServerSessions`` loaded for this request."""
    session: AdminSession = request.scope[_SCOPE_KEY]
    return session


class ServerSessions(AnswerHeaders):
    """Loads the admin session before the route and writes it back when the answer starts.

    The store, clock and settings come from the app's state at each request,
    so the middleware holds nothing of its own.
    """

    async def enter(self, scope: Scope) -> None:
        """Attach the request's session to the scope."""
        request = Request(scope)
        runtime = request.app.state.runtime
        settings: AccessSettings = request.app.state.admin.access
        scope[_SCOPE_KEY] = await AdminSession.load(
            request, runtime.owners, settings, runtime.services.clock.now()
        )

    async def edit(self, scope: Scope, headers: MutableHeaders) -> None:
        """Save the session and send its cookies with the answer."""
        session: AdminSession = scope[_SCOPE_KEY]
        await session.save()
        for cookie in session.cookies:
            headers.append("set-cookie", cookie)
