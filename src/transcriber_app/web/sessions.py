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
from datetime import datetime

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


def _same(expected: str | None, submitted: object) -> bool:
    if expected is None or not isinstance(submitted, str):
        return False
    return hmac.compare_digest(expected.encode(), submitted.encode())


@attrs.define
class AdminSession:
    """The admin session as one request sees it: who is asking, and what to write back."""

    store: OwnerStore
    settings: AccessSettings
    now: datetime
    #: The owner's session, or None for a visitor who is not logged in.
    record: OwnerSession | None = None
    #: The pre-login form token from the visitor's cookie, when it had a well-formed one.
    form_token: str | None = None
    #: ``Set-Cookie`` values to send with the answer.
    cookies: list[str] = attrs.field(factory=list)
    _dirty: bool = False

    @classmethod
    async def load(
        cls, request: Request, store: OwnerStore, settings: AccessSettings, now: datetime
    ) -> AdminSession:
        """The request's session from its cookies: live sessions are touched, dead ones dropped."""
        session = cls(store=store, settings=settings, now=now)
        form_token = request.cookies.get(FORM_COOKIE, "")
        if _TOKEN.fullmatch(form_token):
            session.form_token = form_token
        session_id = request.cookies.get(SESSION_COOKIE)
        if session_id is None:
            return session
        record = None
        if _TOKEN.fullmatch(session_id):
            record = await store.get_session(hash_id(session_id))
        if record is None or not session_is_live(record, now):
            if record is not None:
                await store.delete_session(record.id_hash)
            session.cookies.append(_cookie(SESSION_COOKIE, "", max_age=0))
            return session
        touched = session_touched(record, now, settings)
        session.record = touched or record
        session._dirty = touched is not None
        return session

    @property
    def is_owner(self) -> bool:
        """True when this request comes from a live owner session."""
        return self.record is not None

    def csrf_token(self) -> str:
        """The token forms must carry: the session's, or before login the form cookie's."""
        if self.record is not None:
            return self.record.csrf
        if self.form_token is None:
            self.form_token = new_token()
            self.cookies.append(_cookie(FORM_COOKIE, self.form_token, max_age=None))
        return self.form_token

    def csrf_ok(self, submitted: object) -> bool:
        """True when a form's CSRF field equals the expected token; constant time."""
        expected = self.record.csrf if self.record is not None else self.form_token
        return _same(expected, submitted)

    def flash(self, message: str) -> None:
        """Leave ``message`` for the next page this session sees."""
        if self.record is not None:
            self.record = attrs.evolve(self.record, flash=message)
            self._dirty = True

    def take_flash(self) -> str | None:
        """The message left by ``flash``, once."""
        if self.record is None or self.record.flash is None:
            return None
        message = self.record.flash
        self.record = attrs.evolve(self.record, flash=None)
        self._dirty = True
        return message

    async def log_in(self) -> None:
        """Start a fresh session (new id, new CSRF token); end the one this request had.

        Expired sessions are swept here: a login is the only thing that adds a record.
        """
        if self.record is not None:
            await self.store.delete_session(self.record.id_hash)
        await self.store.delete_expired_sessions(now=self.now)
        session_id = new_token()
        self.record = OwnerSession(
            id_hash=hash_id(session_id),
            csrf=new_token(),
            created=self.now,
            last_seen=self.now,
            expires=session_expiry(self.now, self.now, self.settings),
        )
        await self.store.create_session(self.record)
        self._dirty = False
        lifetime = int(self.settings.session_lifetime.total_seconds())
        self.cookies.append(_cookie(SESSION_COOKIE, session_id, max_age=lifetime))

    async def log_out(self) -> None:
        """End this session in the store, for every copy of its cookie, and drop the cookie."""
        if self.record is not None:
            await self.store.delete_session(self.record.id_hash)
        self.record = None
        self._dirty = False
        self.cookies.append(_cookie(SESSION_COOKIE, "", max_age=0))

    async def save(self) -> None:
        """Write what this request changed; a session deleted meanwhile stays deleted."""
        if self.record is not None and self._dirty:
            self._dirty = False
            await self.store.save_session(self.record)


def session_of(request: Request) -> AdminSession:
    """The session ``ServerSessions`` loaded for this request."""
    session: AdminSession = request.scope[_SCOPE_KEY]
    return session


def _cookie(name: str, value: str, *, max_age: int | None) -> str:
    """A ``Set-Cookie`` value: HttpOnly, SameSite=Lax, path ``/admin``.

    Not ``Secure``: the service speaks plain HTTP on 127.0.0.1, and a Secure
    cookie would never come back. Behind a TLS proxy this is the next change.
    """
    parts = [f"{name}={value}", f"Path={COOKIE_PATH}", "HttpOnly", "SameSite=Lax"]
    if max_age is not None:
        parts.append(f"Max-Age={max_age}")
    return "; ".join(parts)


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
