"""The workspace's pages: the one sign-in, set-password from an invite, one's tokens; the guards.

The sign-in form here is the service's one front door (ADR 76): ``/``,
``/w/login`` and ``/admin/login`` all answer with it, for the people and the
owner alike; the role decides where one lands (``home_of``).

The list of one's recordings is in ``live``, the upload page in ``upload``,
the transcript page of one recording, its audio and its speakers in
``transcript``.

Every page but sign-in and set-password needs a person's session: an
anonymous page request is sent to the sign-in page (303), an anonymous form
post is refused with 403. Every form carries the session's CSRF token (or,
before sign-in, the form cookie's). A person reads only jobs stored with
their own owner key, filtered in the store's query: another person's job
answers 404 exactly as an unknown id does (ADR 55).
"""

from __future__ import annotations

import functools
import logging
import math
import secrets
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

from starlette.datastructures import FormData
from starlette.requests import Request
from starlette.responses import PlainTextResponse, RedirectResponse, Response
from starlette.templating import Jinja2Templates

from transcriber_app.web import language
from transcriber_app.web.admin.rendering import PREFIX as ADMIN_PREFIX
from transcriber_app.web.admin.rendering import WORKSPACE_PREFIX, page_environment
from transcriber_app.web.admin.security import MAX_FORM_FIELDS, form_text
from transcriber_app.web.auth import (
    RESET_PREFIX,
    AdminState,
    claim_attempt,
    hash_password,
    password_problem,
    requester,
    safe_next,
    verify_password,
)
from transcriber_app.web.errors import ApiError, error_response
from transcriber_app.web.inputs import read_form
from transcriber_app.web.language import N_, _, ngettext
from transcriber_app.web.sessions import CSRF_FIELD, Session, session_of
from transcriber_app.web.state import runtime_of
from transcriber_app.web.workspace.credentials import digest, new_api_token, new_token_id
from transcriber_app.web.workspace.strings import page_strings
from transcriber_core import naming
from transcriber_core.entities import Job
from transcriber_core.errors import Conflict, JobNotFound
from transcriber_core.people import (
    MAX_TOKENS_PER_PERSON,
    Person,
    PersonToken,
    token_label_problem,
)

log = logging.getLogger("transcriber.workspace")

#: Where the workspace lives.
PREFIX = WORKSPACE_PREFIX

#: The workspace's own files: templates and the stylesheet.
HERE = Path(__file__).parent

Handler = Callable[[Request], Awaitable[Response]]
FormHandler = Callable[[Request, FormData], Awaitable[Response]]


templates = Jinja2Templates(env=page_environment(HERE / "templates"))
templates.env.globals["page_strings"] = page_strings


# -- answering ----------------------------------------------------------------------------


def render(
    request: Request,
    template: str,
    context: Mapping[str, Any] | None = None,
    *,
    person: Person | None = None,
    status_code: int = 200,
    headers: Mapping[str, str] | None = None,
) -> Response:
    """The page ``template`` with the signed-in person, the CSRF token and the one-shot flash."""
    session = session_of(request)
    full = {
        "person": person,
        "csrf": session.csrf_token(),
        "csrf_field": CSRF_FIELD,
        "flash": session.take_flash(),
        "prefix": PREFIX,
        "admin_prefix": ADMIN_PREFIX,
        "nav": None,
        **(context or {}),
    }
    return templates.TemplateResponse(
        request, template, full, status_code=status_code, headers=dict(headers or {})
    )


def _see_other(url: str) -> RedirectResponse:
    return RedirectResponse(url, status_code=303)


def _refused(text: str | None = None) -> Response:
    return PlainTextResponse(f"{text or _('Sign in first.')}\n", status_code=403)


async def _signed_in(request: Request) -> Person | None:
    """The active person of the request's session (the owner too), or None."""
    return session_of(request).person


PersonPage = Callable[[Request, Person], Awaitable[Response]]
PersonAction = Callable[[Request, FormData, Person], Awaitable[Response]]


def person_page(handler: PersonPage) -> Handler:
    """Only a signed-in person sees the page; anyone else is sent to the sign-in page."""

    @functools.wraps(handler)
    async def guarded(request: Request) -> Response:
        person = await _signed_in(request)
        if person is None:
            target = request.url.path
            return _see_other(f"{PREFIX}/login?{urlencode({'next': target})}")
        return await handler(request, person)

    return guarded


def person_api(handler: PersonPage) -> Handler:
    """Only a signed-in person gets the JSON; anyone else a JSON 403 ``not_signed_in``."""

    @functools.wraps(handler)
    async def guarded(request: Request) -> Response:
        person = await _signed_in(request)
        if person is None:
            return error_response(ApiError(403, "not_signed_in", "sign in first"))
        return await handler(request, person)

    return guarded


def form_post(handler: FormHandler) -> Handler:
    """Read the posted form and pass it on only if it carries the expected CSRF token."""

    @functools.wraps(handler)
    async def checked(request: Request) -> Response:
        form = await read_form(request, max_fields=MAX_FORM_FIELDS)
        if not session_of(request).csrf_ok(form.get(CSRF_FIELD)):
            return _refused(_("The form is stale or forged; reload the page and try again."))
        return await handler(request, form)

    return checked


def person_action(handler: PersonAction) -> Handler:
    """Only a signed-in person may post, with the session's CSRF token; anyone else gets 403."""

    @form_post
    @functools.wraps(handler)
    async def guarded(request: Request, form: FormData) -> Response:
        person = await _signed_in(request)
        if person is None:
            return _refused()
        return await handler(request, form, person)

    return guarded


def _admin(request: Request) -> AdminState:
    admin: AdminState = request.app.state.admin
    return admin


def _client(request: Request) -> str:
    return requester(request)


def home_of(person: Person) -> str:
    """Where ``person`` lands after signing in: the owner on the panel, others on their list."""
    return f"{ADMIN_PREFIX}/" if person.is_owner else f"{PREFIX}/"


def _landing(person: Person, target: object) -> str:
    """Where to go after sign-in: ``target`` when it is a page of one's own, else one's home.

    A person's own pages are the workspace's; the owner's are the panel's too,
    so a person sent to a panel page lands on their list instead.
    """
    prefixes = (PREFIX, ADMIN_PREFIX) if person.is_owner else (PREFIX,)
    return safe_next(target, prefixes) or home_of(person)


async def _throttled(request: Request) -> int | None:
    """Count a password attempt from this client (the sign-in's back-off); seconds to wait."""
    runtime = runtime_of(request)
    wait = await claim_attempt(
        runtime.logins, _client(request), runtime.services.clock.now(), _admin(request).access
    )
    return None if wait is None else max(1, math.ceil(wait.total_seconds()))


def _too_many(
    request: Request, template: str, context: Mapping[str, Any], seconds: int
) -> Response:
    problem = ngettext(
        "Too many wrong passwords; try again in %(num)s second.",
        "Too many wrong passwords; try again in %(num)s seconds.",
        seconds,
    )
    return render(
        request,
        template,
        {**context, "problem": problem},
        status_code=429,
        headers={"Retry-After": str(seconds)},
    )


# -- set-password from an invite -----------------------------------------------------------


async def invite_page(request: Request) -> Response:
    """``GET /w/invite?token=…``: the form that sets the invited person's password."""
    token = request.query_params.get("token", "")
    return render(request, "invite.html", {"token": token, "problem": None})


@form_post
async def invite_submit(request: Request, form: FormData) -> Response:
    """``POST /w/invite``: use the invite once, store the password's hash, sign the person in."""
    runtime = runtime_of(request)
    token = form_text(form, "token")
    password, confirm = form_text(form, "password"), form_text(form, "confirm")
    problem = password_problem(password, confirm)
    if problem is not None:
        return render(request, "invite.html", {"token": token, "problem": problem}, status_code=400)
    # Each try costs a slow hash, so guesses at links meet the sign-in's back-off.
    wait = await _throttled(request)
    if wait is not None:
        return _too_many(request, "invite.html", {"token": token}, wait)
    person = None
    if 0 < len(token) <= 128:
        password_hash = await hash_password(password)
        person = await runtime.people.accept_invite(digest(token), password_hash=password_hash)
    if person is None:
        return render(
            request,
            "message.html",
            {
                "title": _("Invite link refused"),
                "text": _(
                    "This invite link is wrong, used or expired. Ask the owner for a new one."
                ),
            },
            status_code=403,
        )
    await runtime.logins.clear_login_failures(_client(request))
    session = session_of(request)
    await session.sign_in(person)
    session.flash(_("Your password is set; you are signed in."))
    log.info("workspace.invite_used")
    return _see_other(f"{PREFIX}/")


# -- sign-in and sign-out ---------------------------------------------------------------------

#: A hash nobody's password matches, checked for an unknown name so both cost the same.
_nobody: list[str] = []


async def _nobodys_hash() -> str:
    if not _nobody:
        _nobody.append(await hash_password(secrets.token_urlsafe(16)))
    return _nobody[0]


#: What the sign-in page says while no owner exists: where the setup link is.
NO_OWNER_YET = N_(
    "No owner account exists yet. Create it with the one-time setup link the service "
    "printed when it started: the line with event=admin.setup_link in its log on stderr "
    "(journalctl, docker logs or the terminal that runs it). The link works for 30 minutes; "
    "restart the service for a new one."
)


async def login_page(request: Request) -> Response:
    """``GET /``, ``/w/login``, ``/admin/login``: the one sign-in form, or one's home."""
    person = await _signed_in(request)
    target = request.query_params.get("next")
    if person is not None:
        return _see_other(_landing(person, target))
    problem = None if await runtime_of(request).people.find_owner() else _(NO_OWNER_YET)
    context = {"next": target if isinstance(target, str) else "", "problem": problem, "name": ""}
    return render(request, "login.html", context)


@form_post
async def login_submit(request: Request, form: FormData) -> Response:
    """``POST /w/login`` (and ``/admin/login``): check name and password, start the session.

    Slowly and throttled per client, whoever signs in; the role decides where one lands.
    """
    runtime = runtime_of(request)
    target = form_text(form, "next")
    name = form_text(form, "name").strip()
    context = {"next": target, "name": name}
    wait = await _throttled(request)
    if wait is not None:
        return _too_many(request, "login.html", context, wait)
    person = await runtime.people.find_person(name) if 0 < len(name) <= 64 else None
    typed = form_text(form, "password")
    # A reset link's secret is no password: it opens only the reset page.
    if typed.startswith(RESET_PREFIX):
        person = None
    if person is None or person.password_hash is None or not person.is_active:
        await verify_password(await _nobodys_hash(), typed)
        ok = False
    else:
        ok = await verify_password(person.password_hash, typed)
    if person is None or not ok:
        log.warning("workspace.login_failed", extra={"client": _client(request)})
        problem = _("Wrong name or password.")
        return render(request, "login.html", {**context, "problem": problem}, status_code=403)
    await runtime.logins.clear_login_failures(_client(request))
    await session_of(request).sign_in(person)
    log.info("workspace.login", extra={"role": person.role.value})
    return _see_other(_landing(person, target))


@form_post
async def logout(request: Request, _form: FormData) -> Response:
    """``POST /w/logout`` (and ``/admin/logout``): end the session; CSRF-checked."""
    await session_of(request).sign_out()
    return _see_other("/")


@form_post
async def choose_language(request: Request, form: FormData) -> Response:
    """``POST /w/language`` (and ``/admin/language``): the header's switch, on either side.

    Kept in the signed-in person's row (the owner's too, ADR 76) and in a
    cookie; back to the page it was pressed on, any of the service's own.
    """
    target = safe_next(form.get("next"), ("",)) or "/"
    chosen = language.matching(form_text(form, "language"))
    if chosen is None:
        return _see_other(target)
    person = await _signed_in(request)
    if person is not None:
        await runtime_of(request).people.set_person_language(person.id, chosen)
    return language.switched(chosen, target)


# -- one's recordings (the list is in ``live``) ------------------------------------------


def recording_url(job_id: str) -> str:
    """A recording's page in the workspace."""
    return f"{PREFIX}/recordings/{quote(job_id, safe='')}"


# -- one's tokens -----------------------------------------------------------------------------


async def _tokens_page(
    request: Request,
    person: Person,
    *,
    made: str | None = None,
    problem: str | None = None,
    status_code: int = 200,
) -> Response:
    tokens = await runtime_of(request).people.list_tokens(person.id)
    context = {"tokens": tokens, "made": made, "problem": problem, "nav": "tokens"}
    return render(request, "tokens.html", context, person=person, status_code=status_code)


@person_page
async def tokens_page(request: Request, person: Person) -> Response:
    """``GET /w/tokens``: one's API tokens (labels and dates; a token is never shown again)."""
    return await _tokens_page(request, person)


@person_action
async def make_token(request: Request, form: FormData, person: Person) -> Response:
    """``POST /w/tokens``: make a token, store its hash, show it this once (never stored)."""
    runtime = runtime_of(request)
    label = form_text(form, "label").strip()
    problem = token_label_problem(label)
    if problem is not None:
        return await _tokens_page(request, person, problem=problem, status_code=400)
    secret = new_api_token()
    token = PersonToken(
        id=new_token_id(),
        token_hash=digest(secret),
        person_id=person.id,
        label=label,
        created=runtime.services.clock.now(),
    )
    try:
        # The store counts and inserts in one write: racing posts never pass the limit.
        added = await runtime.people.add_token(token, limit=MAX_TOKENS_PER_PERSON)
    except Conflict:  # pragma: no cover - 48 random bits of id met another token's
        return await _tokens_page(request, person, problem=_("Try again."), status_code=409)
    if not added:
        problem = ngettext(
            "You hold %(num)s token already; revoke one first.",
            "You hold %(num)s tokens already; revoke one first.",
            MAX_TOKENS_PER_PERSON,
        )
        return await _tokens_page(request, person, problem=problem, status_code=400)
    log.info("workspace.token_made")
    return await _tokens_page(request, person, made=secret, status_code=201)


@person_action
async def revoke_token(request: Request, _form: FormData, person: Person) -> Response:
    """``POST /w/tokens/{id}/revoke``: delete one of one's tokens; it stops at once."""
    revoked = await runtime_of(request).people.revoke_token(
        person.id, request.path_params["token_id"]
    )
    session: Session = session_of(request)
    session.flash(_("Token revoked.") if revoked else _("No such token of yours."))
    return _see_other(f"{PREFIX}/tokens")


# -- shared with the workspace's other modules (transcript.py, corrections.py) ----------------


async def own_job(request: Request, person: Person) -> Job | None:
    """The path's job when it is the person's; None for any other id (never looked up if bad)."""
    job_id = request.path_params["job_id"]
    if not naming.well_formed_id(job_id):
        return None
    try:
        return await runtime_of(request).services.jobs.get(job_id, owned_by=person.owner_key)
    except JobNotFound:
        return None


def not_found(request: Request, person: Person) -> Response:
    """The 404 page for a recording that is not among the person's (nor anyone's)."""
    return render(
        request,
        "message.html",
        {"title": _("Not found"), "text": _("There is no such recording among yours.")},
        person=person,
        status_code=404,
    )


#: The active person of the request's session, or None.
signed_in = _signed_in


async def signed_in_again(request: Request) -> Person | None:
    """The session's person read again from the store; None once disabled or deleted meanwhile.

    A long request's second look once its body is in (ADR 67): the session
    read its person when the request began.
    """
    person = session_of(request).person
    if person is None:
        return None
    fresh = await runtime_of(request).people.get_person(person.id)
    return fresh if fresh is not None and fresh.is_active else None


#: A 303 to ``url``.
see_other = _see_other
