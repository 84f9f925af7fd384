"""Server-side workspace sessions: a person's cookie holds a random id, the store the rest.

The model is the admin panel's (ADR 17, ``web/sessions.py``'s ``CookieSession``) on a table of
its own (``person_sessions``): ``transcriber_workspace`` carries 256 random
bits; the people store keeps their SHA-256 with the person's id, the CSRF
token, times and flash. Sign-out deletes the record; disabling the person
deletes them all, and the store never answers for a disabled person, so
their sessions stop at once in every process. Forms shown before sign-in
(sign-in, set-password) are protected by the double-submit cookie
``transcriber_workspace_form``.
"""

from __future__ import annotations

from datetime import datetime

import attrs
from starlette.datastructures import MutableHeaders
from starlette.requests import Request
from starlette.types import Scope

from transcriber_app.web.middleware import AnswerHeaders
from transcriber_app.web.sessions import CookieSession
from transcriber_core.entities import OwnerSession
from transcriber_core.people import PersonSession
from transcriber_core.policy import AccessSettings
from transcriber_core.ports import PersonSessions

#: The session cookie's name; its path is ``/w``, so neither the API nor the panel sees it.
SESSION_COOKIE = "transcriber_workspace"
#: The cookie that protects the forms shown before sign-in.
FORM_COOKIE = "transcriber_workspace_form"
#: Where the workspace lives and both cookies are sent.
PREFIX = "/w"
#: Name of the hidden field that carries the CSRF token in every form.
CSRF_FIELD = "csrf"
_SCOPE_KEY = "transcriber.workspace_session"


@attrs.frozen
class _PersonBook:
    """People's sessions: ``transcriber_workspace`` on ``/w``, in the people store."""

    store: PersonSessions
    session_cookie: str = SESSION_COOKIE
    form_cookie: str = FORM_COOKIE
    path: str = PREFIX

    def login_of(self, record: PersonSession) -> OwnerSession:
        return record.login

    def with_login(self, record: PersonSession, login: OwnerSession) -> PersonSession:
        return attrs.evolve(record, login=login)

    async def get(self, id_hash: str) -> PersonSession | None:
        return await self.store.get_person_session(id_hash)

    async def create(self, record: PersonSession) -> None:
        await self.store.create_person_session(record)

    async def save(self, record: PersonSession) -> None:
        await self.store.save_person_session(record)

    async def delete(self, id_hash: str) -> None:
        await self.store.delete_person_session(id_hash)

    async def delete_expired(self, now: datetime) -> None:
        await self.store.delete_expired_person_sessions(now=now)


@attrs.define
class WorkspaceSession(CookieSession[PersonSession]):
    """The workspace session as one request sees it: which person, or a visitor."""

    @classmethod
    async def load(
        cls, request: Request, store: PersonSessions, settings: AccessSettings, now: datetime
    ) -> WorkspaceSession:
        """The request's session from its cookies: live sessions are touched, dead ones dropped."""
        session = cls(book=_PersonBook(store), settings=settings, now=now)
        await session._load(request)
        return session

    @property
    def person_id(self) -> str | None:
        """The signed-in person's id, or None."""
        return None if self.record is None else self.record.person_id

    async def sign_in(self, person_id: str) -> None:
        """Start a fresh session for ``person_id`` (new id, new CSRF token); end this one."""
        await self._start(lambda login: PersonSession(person_id=person_id, login=login))

    async def sign_out(self) -> None:
        """End this session for every copy of its cookie, and drop the cookie."""
        await self._end()


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
