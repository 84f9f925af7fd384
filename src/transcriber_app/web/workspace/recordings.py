"""What a person does to one of their recordings besides correcting it: rename it, delete it.

``POST /w/recordings/{id}/title`` sets the recording's title (SPEC §26, ADR
79) from the field in its page's heading; ``GET /w/recordings/{id}/delete``
asks to confirm, and ``POST`` to the same path deletes it with everything it
holds through the core's one deletion (``deletion.delete_job``), as
``DELETE /api/jobs/{id}`` does. Both forms carry the session's CSRF token;
another person's recording, or an unknown id, answers 404 as the list does.
"""

from __future__ import annotations

import contextlib
import logging

from starlette.datastructures import FormData
from starlette.requests import Request
from starlette.responses import Response

from transcriber_app.web.admin.security import form_text
from transcriber_app.web.language import _
from transcriber_app.web.sessions import session_of
from transcriber_app.web.state import runtime_of
from transcriber_app.web.workspace import views
from transcriber_app.web.workspace.views import PREFIX
from transcriber_core import deletion
from transcriber_core.errors import JobNotFound, OptionRefused
from transcriber_core.people import Person
from transcriber_core.titles import clean_title

log = logging.getLogger("transcriber.workspace")


@views.person_action
async def rename(request: Request, form: FormData, person: Person) -> Response:
    """``POST /w/recordings/{id}/title``: the recording's new title; empty gives it none."""
    job = await views.own_job(request, person)
    if job is None:
        return views.not_found(request, person)
    session = session_of(request)
    try:
        title = clean_title(form_text(form, "title"))
        await runtime_of(request).services.jobs.save_title(job.id, title)
    except OptionRefused as exc:
        session.flash(_("The title was not changed: %(reason)s.", reason=exc.message))
        return views.see_other(views.recording_url(job.id))
    except JobNotFound:
        return views.not_found(request, person)
    log.info("workspace.titled", extra={"job_id": job.id})
    session.flash(_("Title saved."))
    return views.see_other(views.recording_url(job.id))


@views.person_page
async def confirm_delete(request: Request, person: Person) -> Response:
    """``GET /w/recordings/{id}/delete``: what deleting takes away, and the button that does it."""
    job = await views.own_job(request, person)
    if job is None:
        return views.not_found(request, person)
    return views.render(request, "delete.html", {"job": job}, person=person)


@views.person_action
async def delete(request: Request, _form: FormData, person: Person) -> Response:
    """``POST /w/recordings/{id}/delete``: the recording, its transcript and its files go."""
    job = await views.own_job(request, person)
    if job is None:
        return views.not_found(request, person)
    # Deleted meanwhile (another tab): what was asked is done.
    with contextlib.suppress(JobNotFound):
        await deletion.delete_job(runtime_of(request).services, job.id)
    log.info("workspace.deleted", extra={"job_id": job.id})
    session_of(request).flash(_("Recording deleted."))
    return views.see_other(f"{PREFIX}/")
