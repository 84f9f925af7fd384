"""Server-side workspace sessions: a person's cookie holds a random id, the store the rest.

The model is the admin panel's (ADR 17, ``web/sessions.py``) on a table of
its own (``person_sessions``): ``transcriber_workspace`` carries 256 random
bits; the people store keeps their SHA-256 with the person's id, the CSRF
token, times and flash. Sign-out deletes the record; disabling the person
deletes them all, and the store never answers for a disabled person, so
their sessions stop at once in every process. Forms shown before sign-in
(sign-in, set-password) are protected by the double-submit cookie
``transcriber_workspace_form``.
"""

from __future__ import annotations

import hmac
import re
from datetime import datetime

import attrs
from starlette.datastructures import MutableHeaders
from starlette.requests import Request
from starlette.types import Scope

from transcriber_app.web.middleware import AnswerHeaders
from transcriber_app.web.sessions import hash_id, new_token
from transcriber_core.entities import OwnerSession
from transcriber_core.people import PersonSession
from transcriber_core.policy import AccessSettings, session_expiry, session_is_live, session_touched
from transcriber_core.ports import PersonSessions

#: The session cookie's name; its path is ``/w``, so neither the API nor the panel sees it.
SESSION_COOKIE = "transcriber_workspace"
#: The cookie that protects the forms shown before sign-in.
FORM_COOKIE = "transcriber_workspace_form"
#: Where the workspace lives and both cookies are sent.
PREFIX = "/w"
#: Name of the hidden field that carries the CSRF token in every form.
CSRF_FIELD = "csrf"
#: What a cookie value made by ``new_token`` looks like; anything else is ignored.
_TOKEN = re.compile(r"[A-Za-z0-9_-]{43}")
_SCOPE_KEY = "transcriber.workspace_session"


def _same(expected: str | None, submitted: object) -> bool:
    if expected is None or not isinstance(submitted, str):
        return False
    return hmac.compare_digest(expected.encode(), submitted.encode())


def _cookie(name: str, value: str, *, max_age: int | None) -> str:
    """A ``Set-Cookie`` value: HttpOnly, SameSite=Lax, path ``/w`` (not Secure: see ADR 17)."""
    parts = [f"{name}={value}", f"Path={PREFIX}", "HttpOnly", "SameSite=Lax"]
    if max_age is not None:
        parts.append(f"Max-Age={max_age}")
    return "; ".join(parts)


@attrs.define
class WorkspaceSession:
    """The workspace session as one request sees it: which person, and what to write back."""

    store: PersonSessions
    settings: AccessSettings
    now: datetime
    #: The person's session, or None for a visitor who is not signed in.
    record: PersonSession | None = None
    #: The pre-sign-in form token from the visitor's cookie, when it had a well-formed one.
    form_token: str | None = None
    #: ``Set-Cookie`` values to send with the answer.
    cookies: list[str] = attrs.field(factory=list)
    _dirty: bool = False

    @classmethod
    async def load(
        cls, request: Request, store: PersonSessions, settings: AccessSettings, now: datetime
    ) -> WorkspaceSession:
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
            record = await store.get_person_session(hash_id(session_id))
        if record is None or not session_is_live(record.login, now):
            if record is not None:
                await store.delete_person_session(record.login.id_hash)
            session.cookies.append(_cookie(SESSION_COOKIE, "", max_age=0))
            return session
        touched = session_touched(record.login, now, settings)
        session.record = record if touched is None else attrs.evolve(record, login=touched)
        session._dirty = touched is not None
        return session

    @property
    def person_id(self) -> str | None:
        """The signed-in person's id, or None."""
        return None if self.record is None else self.record.person_id

    def csrf_token(self) -> str:
        """The token forms must carry: the session's, or before sign-in the form cookie's."""
        if self.record is not None:
            return self.record.login.csrf
        if self.form_token is None:
            self.form_token = new_token()
            self.cookies.append(_cookie(FORM_COOKIE, self.form_token, max_age=None))
        return self.form_token

    def csrf_ok(self, submitted: object) -> bool:
        """True when a form's CSRF field equals the expected token; constant time."""
        expected = self.record.login.csrf if self.record is not None else self.form_token
        return _same(expected, submitted)

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

    async def sign_in(self, person_id: str) -> None:
        """Start a fresh session for ``person_id`` (new id, new CSRF token); end this one."""
        if self.record is not None:
            await self.store.delete_person_session(self.record.login.id_hash)
        await self.store.delete_expired_person_sessions(now=self.now)
        session_id = new_token()
        login = OwnerSession(
            id_hash=hash_id(session_id),
            csrf=new_token(),
            created=self.now,
            last_seen=self.now,
            expires=session_expiry(self.now, self.now, self.settings),
        )
        self.record = PersonSession(person_id=person_id, login=login)
        await self.store.create_person_session(self.record)
        self._dirty = False
        lifetime = int(self.settings.session_lifetime.total_seconds())
        self.cookies.append(_cookie(SESSION_COOKIE, session_id, max_age=lifetime))

    async def sign_out(self) -> None:
        """End this session in the store, for every copy of its cookie, and drop the cookie."""
        if self.record is not None:
            await self.store.delete_person_session(self.record.login.id_hash)
        self.record = None
        self._dirty = False
        self.cookies.append(_cookie(SESSION_COOKIE, "", max_age=0))

    async def save(self) -> None:
        """Write what this request changed; a session deleted meanwhile stays deleted."""
        if self.record is not None and self._dirty:
            self._dirty = False
            await self.store.save_person_session(self.record)


def workspace_session_of(request: Request) -> WorkspaceSession:
    """The session ``WorkspaceSessions`` loaded for this request."""
    session: WorkspaceSession = request.scope[_SCOPE_KEY]
    return session


class WorkspaceSessions(AnswerHeaders):
    """Loads the workspace session before the route and writes it back when the answer starts."""

    async def enter(self, scope: Scope) -> None:
        """Attach the request's session to the scope."""
        request = Request(scope)
        runtime = request.app.state.runtime
        settings: AccessSettings = request.app.state.admin.access
        scope[_SCOPE_KEY] = await WorkspaceSession.load(
            request, runtime.people, settings, runtime.services.clock.now()
        )

    async def edit(self, scope: Scope, headers: MutableHeaders) -> None:
        """Save the session and send its cookies with the answer."""
        session: WorkspaceSession = scope[_SCOPE_KEY]
        await session.save()
        for cookie in session.cookies:
            headers.append("set-cookie", cookie)
