"""The owner's people page: invite someone by a one-time link, see who exists and their usage.

The link's secret is shown once, on the answer to the invite, and stored
only as its SHA-256; it expires ``INVITE_LIFETIME`` after the invite by the
store's clock (ADR 55). Disabling a person ends their sessions and stops
their tokens at once, in every process.
"""

from __future__ import annotations

import logging

from starlette.datastructures import FormData
from starlette.requests import Request
from starlette.responses import Response

from transcriber_app.web.admin.rendering import PREFIX, render, see_other
from transcriber_app.web.admin.security import action, form_text, page
from transcriber_app.web.language import _
from transcriber_app.web.sessions import new_token, session_of
from transcriber_app.web.state import runtime_of
from transcriber_app.web.workspace.credentials import digest, new_person_id
from transcriber_app.web.workspace.sessions import PREFIX as WORKSPACE
from transcriber_core.errors import Conflict
from transcriber_core.people import INVITE_LIFETIME, Person, name_problem

log = logging.getLogger("transcriber.admin")


async def _people_page(
    request: Request,
    *,
    invited: Person | None = None,
    link: str | None = None,
    problem: str | None = None,
    name: str = "",
    status_code: int = 200,
) -> Response:
    runtime = runtime_of(request)
    people = await runtime.people.list_people()
    usage_store = runtime.services.usage
    usage = {} if usage_store is None else await usage_store.usage([p.owner_key for p in people])
    context = {
        "people": people,
        "usage": usage,
        "quota": runtime.services.settings.seconds_per_day,
        "invited": invited,
        "link": link,
        "problem": problem,
        "name": name,
        "lifetime_days": INVITE_LIFETIME.days,
    }
    return render(request, "people.html", context, status_code=status_code)


@page
async def people_page(request: Request) -> Response:
    """``GET /admin/people``: everyone invited, and the form that invites one more."""
    return await _people_page(request)


@action
async def invite(request: Request, form: FormData) -> Response:
    """``POST /admin/people``: store a new person and an invite; show its link this once."""
    runtime = runtime_of(request)
    name = form_text(form, "name").strip()
    problem = name_problem(name)
    if problem is not None:
        return await _people_page(request, problem=problem, name=name, status_code=400)
    person = Person(id=new_person_id(), name=name, created=runtime.services.clock.now())
    secret = new_token()
    try:
        await runtime.people.invite(person, token_hash=digest(secret), lifetime=INVITE_LIFETIME)
    except Conflict:
        problem = _("Someone already has that name; choose another.")
        return await _people_page(request, problem=problem, name=name, status_code=409)
    log.info("admin.person_invited")
    # The owner's own address for the service, as their browser reached it.
    link = f"{str(request.base_url).rstrip('/')}{WORKSPACE}/invite?token={secret}"
    return await _people_page(request, invited=person, link=link, status_code=201)


@action
async def disable(request: Request, _form: FormData) -> Response:
    """``POST /admin/people/{id}/disable``: the person's sessions and tokens stop at once."""
    runtime = runtime_of(request)
    done = await runtime.people.disable_person(
        request.path_params["person_id"], now=runtime.services.clock.now()
    )
    if done:
        log.info("admin.person_disabled")
    session_of(request).flash(
        _("Disabled; their sessions and tokens stopped.") if done else _("No such person.")
    )
    return see_other(f"{PREFIX}/people")


@action
async def enable(request: Request, _form: FormData) -> Response:
    """``POST /admin/people/{id}/enable``: a disabled person may sign in again (ADR 60).

    Their sessions stay ended (disabling deleted them) and their API tokens
    are deleted with it: a token that may have leaked does not come back.
    """
    done = await runtime_of(request).people.enable_person(request.path_params["person_id"])
    if done:
        log.info("admin.person_enabled")
    session_of(request).flash(
        _("Enabled; they sign in again and make new API tokens.") if done else _("No such person.")
    )
    return see_other(f"{PREFIX}/people")
