"""The owner's account: setup with the startup link, the reset link and the password change.

The owner is a person with the owner's role (ADR 76): setup asks for a name
and a password and stores that person; signing in and out is the one door's
(``workspace/views.py``). Passwords are hashed slowly and checked with a
back-off per client (``web/auth.py``); sessions are server-side
(``web/sessions.py``, ADR 17).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping
from datetime import timedelta
from typing import Any

import attrs
from starlette.datastructures import FormData
from starlette.requests import Request
from starlette.responses import Response

from transcriber_app.web.admin.rendering import PREFIX, message, render, see_other
from transcriber_app.web.admin.security import action, form_post, form_text, page, refused
from transcriber_app.web.auth import (
    AdminState,
    claim_attempt,
    hash_password,
    password_problem,
    requester,
    reset_accepts,
    verify_password,
)
from transcriber_app.web.language import _, ngettext
from transcriber_app.web.sessions import session_of
from transcriber_app.web.state import runtime_of
from transcriber_app.web.workspace.credentials import new_person_id
from transcriber_core.errors import Conflict
from transcriber_core.people import FIRST_OWNER_NAME, Person, Role, name_problem

log = logging.getLogger("transcriber.admin")


def _admin(request: Request) -> AdminState:
    admin: AdminState = request.app.state.admin
    return admin


def _client(request: Request) -> str:
    """Who is asking, for the sign-in back-off: the peer, or who a trusted proxy says it is."""
    return requester(request)


# -- setup ----------------------------------------------------------------------------


async def setup_page(request: Request) -> Response:
    """``GET /admin/setup?token=…``: the form that creates the owner, for the startup link."""
    runtime = runtime_of(request)
    if await runtime.people.find_owner() is not None:
        return _owner_exists(request)
    token = request.query_params.get("token", "")
    if not _setup_accepts(request, token):
        return _bad_setup_link(request)
    context = {"token": token, "problem": None, "reset": False, "name": FIRST_OWNER_NAME}
    return render(request, "setup.html", context)


@form_post
async def setup_submit(request: Request, form: FormData) -> Response:
    """``POST /admin/setup``: store the owner (a person with the owner's role) and sign them in."""
    runtime = runtime_of(request)
    if await runtime.people.find_owner() is not None:
        return _owner_exists(request)
    token = form_text(form, "token")
    if not _setup_accepts(request, token):
        return _bad_setup_link(request)
    name = form_text(form, "name").strip()
    password, confirm = form_text(form, "password"), form_text(form, "confirm")
    problem = name_problem(name) or password_problem(password, confirm)
    if problem is not None:
        context = {"token": token, "problem": problem, "reset": False, "name": name}
        return render(request, "setup.html", context, status_code=400)
    owner = Person(
        id=new_person_id(),
        name=name,
        password_hash=await hash_password(password),
        created=runtime.services.clock.now(),
        role=Role.OWNER,
    )
    try:
        created = await runtime.people.create_owner(owner)
    except Conflict:
        problem = _("Someone already has that name; choose another.")
        context = {"token": token, "problem": problem, "reset": False, "name": name}
        return render(request, "setup.html", context, status_code=409)
    if not created:
        return _owner_exists(request)
    _admin(request).setup = None
    log.info("admin.owner_created")
    session = session_of(request)
    await session.sign_in(owner)
    session.flash(_("The owner account is ready; you are signed in."))
    return see_other(f"{PREFIX}/")


async def reset_page(request: Request) -> Response:
    """``GET /admin/reset?token=…``: the new-password form, for ``owner reset-password``'s link."""
    runtime = runtime_of(request)
    token = request.query_params.get("token", "")
    if not await reset_accepts(runtime.people, token, runtime.services.clock.now()):
        return _bad_reset_link(request)
    return render(request, "setup.html", {"token": token, "problem": None, "reset": True})


@form_post
async def reset_submit(request: Request, form: FormData) -> Response:
    """``POST /admin/reset``: the link's secret gives way to the new password; logged in."""
    runtime = runtime_of(request)
    now = runtime.services.clock.now()
    token = form_text(form, "token")
    # No login back-off here: a token is checked for form and expiry before any hash,
    # and the hashes at once are bounded (auth._hashing), as for the page above.
    if not await reset_accepts(runtime.people, token, now):
        return _bad_reset_link(request)
    password, confirm = form_text(form, "password"), form_text(form, "confirm")
    problem = password_problem(password, confirm)
    if problem is not None:
        return render(
            request,
            "setup.html",
            {"token": token, "problem": problem, "reset": True},
            status_code=400,
        )
    owner = await runtime.people.find_owner()
    new_hash = await hash_password(password)
    if owner is None or not await runtime.people.set_password(owner.id, new_hash):
        return _bad_reset_link(request)
    await runtime.logins.clear_login_failures(_client(request))
    log.info("admin.password_reset")
    session = session_of(request)
    await session.sign_in(attrs.evolve(owner, password_hash=new_hash))
    session.flash(_("The password is set; you are signed in."))
    return see_other(f"{PREFIX}/")


def _bad_reset_link(request: Request) -> Response:
    return message(
        request,
        _("Reset link refused"),
        _(
            "This reset link is wrong, used or expired. Run `transcriber owner reset-password`"
            " for a new one."
        ),
        status_code=403,
    )


def _setup_accepts(request: Request, token: str) -> bool:
    link = _admin(request).setup
    return link is not None and link.accepts(token, runtime_of(request).services.clock.now())


def _owner_exists(request: Request) -> Response:
    return message(
        request,
        _("The owner exists"),
        _(
            "The owner account was already created; setup links no longer work. Sign in at "
            "the service's address instead."
        ),
        status_code=403,
    )


def _bad_setup_link(request: Request) -> Response:
    return message(
        request,
        _("Setup link refused"),
        _(
            "This setup link is wrong or has expired. Restart the service to get a new one"
            " in its log."
        ),
        status_code=403,
    )


def _too_many(
    request: Request, template: str, context: Mapping[str, Any], wait: timedelta
) -> Response:
    """429 with ``Retry-After``: the client's back-off has not passed yet."""
    seconds = max(1, math.ceil(wait.total_seconds()))
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


# -- password change --------------------------------------------------------------------


@page
async def account_page(request: Request) -> Response:
    """``GET /admin/account``: the form that changes the owner's password."""
    return render(request, "account.html", {"problem": None})


@action
async def change_password(request: Request, form: FormData) -> Response:
    """``POST /admin/account/password``: check the current password, store the new one.

    Every session ends, in the same transaction as the new hash, so a cookie
    left in another browser (or stolen) is dead; this browser gets a fresh
    session. The current password is checked with the login's back-off, so a
    stolen session cannot guess it faster than the login form could.
    """
    runtime, admin = runtime_of(request), _admin(request)
    password, confirm = form_text(form, "password"), form_text(form, "confirm")
    problem = password_problem(password, confirm)
    if problem is not None:
        return render(request, "account.html", {"problem": problem}, status_code=400)
    client, now = _client(request), runtime.services.clock.now()
    wait = await claim_attempt(runtime.logins, client, now, admin.access)
    if wait is not None:
        return _too_many(request, "account.html", {}, wait)
    owner = session_of(request).person
    current = None if owner is None else owner.password_hash
    if owner is None or current is None:
        return refused()
    if not await verify_password(current, form_text(form, "current")):
        log.warning("admin.password_change_refused", extra={"client": client})
        problem = _("The current password is wrong.")
        return render(request, "account.html", {"problem": problem}, status_code=403)
    await runtime.logins.clear_login_failures(client)
    new_hash = await hash_password(password)
    if not await runtime.people.set_password(owner.id, new_hash):
        return refused()
    session = session_of(request)
    # The old record went with all the others; this browser starts a new session.
    await session.sign_in(attrs.evolve(owner, password_hash=new_hash))
    session.flash(_("Password changed; every other session was logged out."))
    log.info("admin.password_changed", extra={"client": client})
    return see_other(f"{PREFIX}/")
