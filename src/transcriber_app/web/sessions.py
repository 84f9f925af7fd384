"""Server-side sessions: the cookie holds a random id, the database holds the rest (ADR 17, 76).

One kind of session for everyone who signs in, the owner included (ADR 76):
``transcriber_session`` on ``/`` carries 256 random bits and nothing else.
The people store keeps the SHA-256 of that id with whose session it is, the
CSRF token, login time, last-seen time, expiry and one-shot flash message.
Sign-out deletes the record, so every copy of the cookie is dead at once; a
password change or disabling the person deletes all of theirs. Nothing is
signed, so nothing secret is kept for signing. The session knows the person
(and so their role) once per request: the admin panel asks for the owner's
role, the workspace for any active person.

Before sign-in there is no record (a visitor must not be able to fill the
table by opening the sign-in page). Its forms are protected by a second
cookie, ``transcriber_form``, whose random value the form must repeat
(double submit): another site can neither read it nor set the field.

``Sessions`` wraps the panel, the workspace and the front door: it loads the
session before the route runs, and when the answer starts it writes what
the route changed (last seen, flash) and adds the ``Set-Cookie`` headers.
It runs inside ``Languages``: a signed-in person's language, kept in their row,
is the request's from then on.
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

from transcriber_app.web import language
from transcriber_app.web.middleware import AnswerHeaders
from transcriber_core.entities import SessionLogin
from transcriber_core.people import Person, PersonSession
from transcriber_core.policy import AccessSettings, session_expiry, session_is_live, session_touched
from transcriber_core.ports import PeopleStore

#: The session cookie's name; sent to every path, so one sign-in opens the panel and the workspace.
SESSION_COOKIE = "transcriber_session"
#: The cookie that protects the forms shown before sign-in (sign-in, setup, invite).
FORM_COOKIE = "transcriber_form"
#: Where both cookies are sent.
COOKIE_PATH = "/"
#: Name of the hidden field that carries the CSRF token in every form.
CSRF_FIELD = "csrf"
#: What a cookie value made by ``secrets.token_urlsafe(32)`` looks like; anything else is ignored.
_TOKEN = re.compile(r"[A-Za-z0-9_-]{43}")
_SCOPE_KEY = "transcriber.session"


def new_token() -> str:
    """A fresh random token: 256 bits, URL-safe, 43 characters."""
    return secrets.token_urlsafe(32)


def hash_id(session_id: str) -> str:
    """What the store keeps instead of the id: its SHA-256 in hex.

    The id has 256 random bits, so a fast unsalted hash is enough: nobody
    can search that space, and the lookup stays one index probe.
    """
    return hashlib.sha256(session_id.encode("ascii")).hexdigest()


@attrs.define
class Session:
    """A server-side session as one request sees it: whose, and what to write back."""

    store: PeopleStore
    settings: AccessSettings
    now: datetime
    #: The live session, or None for a visitor who is not signed in.
    record: PersonSession | None = None
    #: Whose it is: an active person (the owner too), or None.
    person: Person | None = None
    #: The pre-login form token from the visitor's cookie, when it had a well-formed one.
    form_token: str | None = None
    #: ``Set-Cookie`` values to send with the answer.
    cookies: list[str] = attrs.field(factory=list)
    _dirty: bool = False

    @classmethod
    async def load(
        cls, request: Request, store: PeopleStore, settings: AccessSettings, now: datetime
    ) -> Session:
        """The request's session from its cookies: live sessions are touched, dead ones dropped."""
        session = cls(store=store, settings=settings, now=now)
        await session._load(request)
        return session

    async def _load(self, request: Request) -> None:
        form_token = request.cookies.get(FORM_COOKIE, "")
        if _TOKEN.fullmatch(form_token):
            self.form_token = form_token
        session_id = request.cookies.get(SESSION_COOKIE)
        if session_id is None:
            return
        store = self.store
        record = (
            await store.get_person_session(hash_id(session_id))
            if _TOKEN.fullmatch(session_id)
            else None
        )
        person = None if record is None else await store.get_person(record.person_id)
        live = record is not None and session_is_live(record.login, self.now)
        if record is None or person is None or not person.is_active or not live:
            if record is not None:
                await store.delete_person_session(record.login.id_hash)
            self._set_cookie(SESSION_COOKIE, "", max_age=0)
            return
        touched = session_touched(record.login, self.now, self.settings)
        self.record = record if touched is None else attrs.evolve(record, login=touched)
        self.person = person
        self._dirty = touched is not None

    @property
    def person_id(self) -> str | None:
        """The signed-in person's id, or None."""
        return None if self.person is None else self.person.id

    @property
    def is_owner(self) -> bool:
        """True when this request comes from the owner's live session."""
        return self.person is not None and self.person.is_owner

    def csrf_token(self) -> str:
        """The token forms must carry: the session's, or before sign-in the form cookie's."""
        if self.record is not None:
            return self.record.login.csrf
        if self.form_token is None:
            self.form_token = new_token()
            self._set_cookie(FORM_COOKIE, self.form_token, max_age=None)
        return self.form_token

    def csrf_ok(self, submitted: object) -> bool:
        """True when a form's CSRF field equals the expected token; constant time."""
        expected = self.record.login.csrf if self.record is not None else self.form_token
        if expected is None or not isinstance(submitted, str):
            return False
        return hmac.compare_digest(expected.encode(), submitted.encode())

    def flash(self, message: str) -> None:
        """Leave ``message`` for the next page this session sees (never a secret: it is stored)."""
        if self.record is not None:
            login = attrs.evolve(self.record.login, flash=message)
            self.record = attrs.evolve(self.record, login=login)
            self._dirty = True

    def take_flash(self) -> str | None:
        """The message left by ``flash``, once."""
        if self.record is None or self.record.login.flash is None:
            return None
        message = self.record.login.flash
        self.record = attrs.evolve(self.record, login=attrs.evolve(self.record.login, flash=None))
        self._dirty = True
        return message

    async def sign_in(self, person: Person) -> None:
        """Start a fresh session for ``person`` (new id, new CSRF token); end this one.

        Expired sessions are swept here: a sign-in is the only thing that adds a record.
        """
        if self.record is not None:
            await self.store.delete_person_session(self.record.login.id_hash)
        await self.store.delete_expired_person_sessions(now=self.now)
        session_id = new_token()
        login = SessionLogin(
            id_hash=hash_id(session_id),
            csrf=new_token(),
            created=self.now,
            last_seen=self.now,
            expires=session_expiry(self.now, self.now, self.settings),
        )
        self.record = PersonSession(person_id=person.id, login=login)
        self.person = person
        await self.store.create_person_session(self.record)
        self._dirty = False
        lifetime = int(self.settings.session_lifetime.total_seconds())
        self._set_cookie(SESSION_COOKIE, session_id, max_age=lifetime)

    async def sign_out(self) -> None:
        """End this session in the store, for every copy of its cookie, and drop the cookie."""
        if self.record is not None:
            await self.store.delete_person_session(self.record.login.id_hash)
        self.record = None
        self.person = None
        self._dirty = False
        self._set_cookie(SESSION_COOKIE, "", max_age=0)

    async def save(self) -> None:
        """Write what this request changed; a session deleted meanwhile stays deleted."""
        if self.record is not None and self._dirty:
            self._dirty = False
            await self.store.save_person_session(self.record)

    def _set_cookie(self, name: str, value: str, *, max_age: int | None) -> None:
        """Send a ``Set-Cookie``: HttpOnly, SameSite=Lax, on ``/``.

        Not ``Secure``: the service speaks plain HTTP on 127.0.0.1, and a Secure
        cookie would never come back. Behind a TLS proxy this is the next change.
        """
        parts = [f"{name}={value}", f"Path={COOKIE_PATH}", "HttpOnly", "SameSite=Lax"]
        if max_age is not None:
            parts.append(f"Max-Age={max_age}")
        self.cookies.append("; ".join(parts))


def session_of(request: Request) -> Session:
    """The session ``Sessions`` loaded for this request."""
    session: Session = request.scope[_SCOPE_KEY]
    return session


class Sessions(AnswerHeaders):
    """Loads the session before the route and writes it back when the answer starts.

    The store, clock and settings come from the app's state at each request,
    so the middleware holds nothing of its own.
    """

    async def enter(self, scope: Scope) -> None:
        """Attach the request's session to the scope."""
        request = Request(scope)
        runtime = request.app.state.runtime
        settings: AccessSettings = request.app.state.admin.access
        session = await Session.load(
            request, runtime.people, settings, runtime.services.clock.now()
        )
        scope[_SCOPE_KEY] = session
        if session.person is not None:
            # Their own choice, kept in their row, outranks this browser's cookie and header
            # (ADR 77): on the panel and in the workspace alike.
            language.use(session.person.language)

    async def edit(self, scope: Scope, headers: MutableHeaders) -> None:
        """Save the session and send its cookies with the answer."""
        session: Session = scope[_SCOPE_KEY]
        await session.save()
        for cookie in session.cookies:
            headers.append("set-cookie", cookie)
