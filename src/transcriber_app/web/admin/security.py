"""What guards every admin answer: security headers, the owner check and the CSRF check.

Every page but setup and sign-in needs the owner's session (the owner's
role, ADR 76): an anonymous page request, or a person's, is sent to the
sign-in page (303), which sends a signed-in person to their own list; an
anonymous or a person's download or form post is refused with 403, and
neither learns whether the job or file exists.
Every form carries the session's CSRF token; a post without the right one
is refused with 403. Each rule is written once here and worn by the views
as a decorator: ``page``, ``owner_only``, ``form_post`` and ``action``
(``owner_only`` over ``form_post``).
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable, Mapping
from urllib.parse import urlencode

from starlette.datastructures import FormData, MutableHeaders
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import Scope

from transcriber_app.web.admin.rendering import PREFIX, plain, see_other
from transcriber_app.web.inputs import read_form
from transcriber_app.web.language import _
from transcriber_app.web.middleware import AnswerHeaders
from transcriber_app.web.sessions import CSRF_FIELD, session_of

#: The largest request body the panel reads; its forms hold a few short fields.
MAX_FORM_BYTES = 64 * 1024
#: The most fields a panel form may have; none has more than six.
MAX_FORM_FIELDS = 20

#: Headers on every admin answer: nothing cached, framed, referred or run.
SECURITY_HEADERS: Mapping[str, str] = {
    "Cache-Control": "no-store",
    "Content-Security-Policy": (
        "default-src 'none'; style-src 'self'; img-src 'self'; manifest-src 'self';"
        " form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
    ),
    "Referrer-Policy": "no-referrer",
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
}

Handler = Callable[[Request], Awaitable[Response]]
FormHandler = Callable[[Request, FormData], Awaitable[Response]]


def refused(text: str | None = None) -> Response:
    """The answer to an anonymous download or form post: no page, no hint of what exists."""
    return plain(text or _("Sign in as the owner first."), status_code=403)


def page(handler: Handler) -> Handler:
    """Only the owner sees the page; anyone else is sent to the sign-in page."""

    @functools.wraps(handler)
    async def guarded(request: Request) -> Response:
        if not session_of(request).is_owner:
            target = request.url.path + (f"?{request.url.query}" if request.url.query else "")
            return see_other(f"{PREFIX}/login?{urlencode({'next': target})}")
        return await handler(request)

    return guarded


def owner_only(handler: Handler) -> Handler:
    """Only the owner gets an answer; anyone else gets 403 before anything is read."""

    @functools.wraps(handler)
    async def guarded(request: Request) -> Response:
        if not session_of(request).is_owner:
            return refused()
        return await handler(request)

    return guarded


def form_post(handler: FormHandler) -> Handler:
    """Read the posted form and pass it on only if it carries the session's CSRF token."""

    @functools.wraps(handler)
    async def checked(request: Request) -> Response:
        form = await read_form(request, max_fields=MAX_FORM_FIELDS)
        if not session_of(request).csrf_ok(form.get(CSRF_FIELD)):
            return refused(_("The form is stale or forged; reload the page and try again."))
        return await handler(request, form)

    return checked


def action(handler: FormHandler) -> Handler:
    """Only the owner may post, with the session's CSRF token; anyone else gets 403."""
    return owner_only(form_post(handler))


def form_text(form: FormData, name: str) -> str:
    """A text field of the form; "" when it is missing or is a file."""
    value = form.get(name)
    return value if isinstance(value, str) else ""


#: The workspace's headers: the panel's, but its pages run their own scripts
#: (``/w/static/*.js``, never inline), play the recording and fetch JSON from
#: this origin (ADR 56).
WORKSPACE_HEADERS: Mapping[str, str] = {
    **SECURITY_HEADERS,
    "Content-Security-Policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self';"
        " media-src 'self'; connect-src 'self'; manifest-src 'self'; form-action 'self';"
        " frame-ancestors 'none'; base-uri 'none'"
    ),
}


class SecurityHeaders(AnswerHeaders):
    """Adds ``SECURITY_HEADERS`` to every answer of the wrapped app."""

    headers: Mapping[str, str] = SECURITY_HEADERS

    async def edit(self, scope: Scope, headers: MutableHeaders) -> None:
        """Each security header the answer does not set itself."""
        for name, value in self.headers.items():
            headers.setdefault(name, value)


class WorkspaceHeaders(SecurityHeaders):
    """Adds ``WORKSPACE_HEADERS`` to every answer of the workspace."""

    headers = WORKSPACE_HEADERS
