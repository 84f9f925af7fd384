"""The owner's people page: invite someone by a one-time link, see who exists and their usage.

The link's secret is shown once, on the answer to the invite, and stored
only as its SHA-256; it expires ``INVITE_LIFETIME`` after the invite by the
store's clock (ADR 55). Disabling a person ends their sessions and stops
their tokens at once, in every process; deleting one, after a confirmation
page, removes them with their recordings and voices (ADR 90).
"""

from __future__ import annotations

import logging

from starlette.datastructures import FormData
from starlette.requests import Request
from starlette.responses import Response

from transcriber_app.web.admin.rendering import PREFIX, message, render, see_other
from transcriber_app.web.admin.security import action, form_text, page
from transcriber_app.web.language import _
from transcriber_app.web.sessions import new_token, session_of
from transcriber_app.web.state import runtime_of
from transcriber_app.web.workspace.credentials import digest, new_person_id
from transcriber_app.web.workspace.views import PREFIX as WORKSPACE
from transcriber_core.deletion import forget_person
from transcriber_core.errors import Conflict
from transcriber_core.people import INVITE_LIFETIME, Person, name_problem, person_owner

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


def _no_such_person(request: Request) -> Response:
    return message(request, _("No such person"), _("Nobody has this id."), status_code=404)


def _owner_stays(request: Request) -> Response:
    """The owner is never deleted (nor disabled): the panel would lose its one account."""
    return message(
        request, _("The owner stays"), _("The owner cannot be deleted."), status_code=403
    )


@page
async def confirm_delete(request: Request) -> Response:
    """``GET /admin/people/{id}/delete``: what deleting the person removes, and the button.

    Nothing is removed until this page's form is posted (the panel runs no
    script, ADR 15).
    """
    runtime = runtime_of(request)
    person = await runtime.people.get_person(request.path_params["person_id"])
    if person is None:
        return _no_such_person(request)
    if person.is_owner:
        return _owner_stays(request)
    services = runtime.services
    owner = person_owner(person.id)
    recordings = await services.listings.list_owned_jobs(owner, limit=1001)
    voices = [] if services.voices is None else await services.voices.list_voices(owner)
    context = {
        "person": person,
        "recordings": len(recordings),
        "voices": len(voices),
        "tokens": len(await runtime.people.list_tokens(person.id)),
        "chats": len(await runtime.people.list_linked_chats(person.id)),
    }
    return render(request, "person_delete.html", context)


@action
async def delete(request: Request, _form: FormData) -> Response:
    """``POST /admin/people/{id}/delete``: the person, their recordings and voices go (ADR 90)."""
    runtime = runtime_of(request)
    person = await runtime.people.get_person(request.path_params["person_id"])
    if person is not None and person.is_owner:
        return _owner_stays(request)
    deleted = await forget_person(
        runtime.services, runtime.people, request.path_params["person_id"]
    )
    if deleted is None:
        return _no_such_person(request)
    log.info("admin.person_deleted", extra={"recordings": deleted})
    session_of(request).flash(_("Deleted, with their recordings and voices."))
    return see_other(f"{PREFIX}/people")
