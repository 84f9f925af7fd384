"""The owner's account: setup with the startup link, login, logout and the password change.

Passwords are hashed slowly and checked with a back-off per client
(``web/auth.py``); sessions are server-side (``web/sessions.py``, ADR 17).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping
from datetime import timedelta
from typing import Any

from starlette.datastructures import FormData
from starlette.requests import Request
from starlette.responses import Response

from transcriber_app.web import language
from transcriber_app.web.admin.rendering import PREFIX, message, render, see_other
from transcriber_app.web.admin.security import action, form_post, form_text, page, refused
from transcriber_app.web.auth import (
    RESET_PREFIX,
    AdminState,
    claim_attempt,
    hash_password,
    password_problem,
    requester,
    reset_accepts,
    safe_next,
    verify_password,
)
from transcriber_app.web.language import N_, _, ngettext
from transcriber_app.web.sessions import session_of
from transcriber_app.web.state import runtime_of

log = logging.getLogger("transcriber.admin")


def _admin(request: Request) -> AdminState:
    admin: AdminState = request.app.state.admin
    return admin


def _client(request: Request) -> str:
    """Who is asking, for the login back-off: the peer, or who a trusted proxy says it is."""
    return requester(request)


def _safe_next(target: object) -> str:
    """Where to go after login: a path inside the panel, never another site."""
    return safe_next(target, PREFIX)


# -- setup ----------------------------------------------------------------------------


async def setup_page(request: Request) -> Response:
    """``GET /admin/setup?token=…``: the form that creates the owner, for the startup link."""
    runtime = runtime_of(request)
    if await runtime.owners.get_owner_hash() is not None:
        return _owner_exists(request)
    token = request.query_params.get("token", "")
    if not _setup_accepts(request, token):
        return _bad_setup_link(request)
    return render(request, "setup.html", {"token": token, "problem": None, "reset": False})


@form_post
async def setup_submit(request: Request, form: FormData) -> Response:
    """``POST /admin/setup``: store the owner's password hash and log the owner in."""
    runtime = runtime_of(request)
    if await runtime.owners.get_owner_hash() is not None:
        return _owner_exists(request)
    token = form_text(form, "token")
    if not _setup_accepts(request, token):
        return _bad_setup_link(request)
    password, confirm = form_text(form, "password"), form_text(form, "confirm")
    problem = password_problem(password, confirm)
    if problem is not None:
        context = {"token": token, "problem": problem, "reset": False}
        return render(request, "setup.html", context, status_code=400)
    password_hash = await hash_password(password)
    if not await runtime.owners.create_owner(password_hash, now=runtime.services.clock.now()):
        return _owner_exists(request)
    _admin(request).setup = None
    log.info("admin.owner_created")
    session = session_of(request)
    await session.log_in()
    session.flash(_("The owner account is ready; you are logged in."))
    return see_other(f"{PREFIX}/")


async def reset_page(request: Request) -> Response:
    """``GET /admin/reset?token=…``: the new-password form, for ``owner reset-password``'s link."""
    runtime = runtime_of(request)
    token = request.query_params.get("token", "")
    if not await reset_accepts(runtime.owners, token, runtime.services.clock.now()):
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
    if not await reset_accepts(runtime.owners, token, now):
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
    if not await runtime.owners.change_password(await hash_password(password), now=now):
        return _bad_reset_link(request)
    await runtime.owners.clear_login_failures(_client(request))
    log.info("admin.password_reset")
    session = session_of(request)
    await session.log_in()
    session.flash(_("The password is set; you are logged in."))
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
        _("The owner account was already created; setup links no longer work. Log in instead."),
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


# -- login and logout -------------------------------------------------------------------

#: What the login page says while no owner exists: where the setup link is.
NO_OWNER_YET = N_(
    "No owner account exists yet. Create it with the one-time setup link the service "
    "printed when it started: the line with event=admin.setup_link in its log on stderr "
    "(journalctl, docker logs or the terminal that runs it). The link works for 30 minutes; "
    "restart the service for a new one."
)


async def login_page(request: Request) -> Response:
    """``GET /admin/login``: the password form, or the list for a logged-in owner."""
    if session_of(request).is_owner:
        return see_other(f"{PREFIX}/")
    target = _safe_next(request.query_params.get("next"))
    context = {"next": target, "problem": None}
    if await runtime_of(request).owners.get_owner_hash() is None:
        context["problem"] = _(NO_OWNER_YET)
    return render(request, "login.html", context)


@form_post
async def login_submit(request: Request, form: FormData) -> Response:
    """``POST /admin/login``: check the password (slowly, throttled) and start the session."""
    runtime, admin = runtime_of(request), _admin(request)
    target = _safe_next(form.get("next"))
    client, now = _client(request), runtime.services.clock.now()
    # Counted as a failure before the password is checked, so parallel guesses meet the
    # back-off too; a right password clears it below.
    wait = await claim_attempt(runtime.owners, client, now, admin.access)
    if wait is not None:
        return _too_many(request, "login.html", {"next": target}, wait)
    password_hash = await runtime.owners.get_owner_hash()
    if password_hash is None:
        problem = _(NO_OWNER_YET)
        return render(request, "login.html", {"next": target, "problem": problem}, status_code=403)
    typed = form_text(form, "password")
    # A reset link's secret is no password: it opens only the reset page.
    if typed.startswith(RESET_PREFIX) or not await verify_password(password_hash, typed):
        log.warning("admin.login_failed", extra={"client": client})
        return render(
            request,
            "login.html",
            {"next": target, "problem": _("Wrong password.")},
            status_code=403,
        )
    await runtime.owners.clear_login_failures(client)
    await session_of(request).log_in()
    log.info("admin.login", extra={"client": client})
    return see_other(target)


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


@form_post
async def logout(request: Request, _form: FormData) -> Response:
    """``POST /admin/logout``: end the session (CSRF-checked, so no page can log you out)."""
    await session_of(request).log_out()
    return see_other(f"{PREFIX}/login")


# -- password change --------------------------------------------------------------------


@form_post
async def choose_language(request: Request, form: FormData) -> Response:
    """``POST /admin/language``: the header's switch, kept in this browser's cookie."""
    target = _safe_next(form.get("next"))
    chosen = language.matching(form_text(form, "language"))
    return see_other(target) if chosen is None else language.switched(chosen, target)


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
    wait = await claim_attempt(runtime.owners, client, now, admin.access)
    if wait is not None:
        return _too_many(request, "account.html", {}, wait)
    current = await runtime.owners.get_owner_hash()
    if current is None or not await verify_password(current, form_text(form, "current")):
        log.warning("admin.password_change_refused", extra={"client": client})
        problem = _("The current password is wrong.")
        return render(request, "account.html", {"problem": problem}, status_code=403)
    await runtime.owners.clear_login_failures(client)
    new_hash = await hash_password(password)
    if not await runtime.owners.change_password(new_hash, now=runtime.services.clock.now()):
        return refused()
    session = session_of(request)
    # The old record went with all the others; this browser starts a new session.
    await session.log_in()
    session.flash(_("Password changed; every other session was logged out."))
    log.info("admin.password_changed", extra={"client": client})
    return see_other(f"{PREFIX}/")
