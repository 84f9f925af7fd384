"""The recording page's Summary panel and Ask box (SPEC §27): the API's answers, for the page.

The page calls these as its editor calls ``/words``: JSON, the session's
CSRF token in ``X-CSRF-Token`` on a POST. Each is the API's own route
(``web/api/summaries.py``) once the person's recording is found: the same
states, bodies and codes, 404 ``llm_unavailable`` without ``[llm]``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from starlette.requests import Request
from starlette.responses import Response

from transcriber_app.web.api import summaries
from transcriber_app.web.errors import ApiError, error_response
from transcriber_app.web.workspace import views
from transcriber_app.web.workspace.corrections import CSRF_HEADER
from transcriber_app.web.workspace.sessions import workspace_session_of
from transcriber_core.entities import Job

_Answer = Callable[[Request, Job], Awaitable[Response]]


async def _own_job(request: Request, *, posted: bool) -> Job:
    """The signed-in person's recording of the path; a POST carries the session's CSRF token."""
    person = await views.signed_in(request)
    if person is None:
        raise ApiError(403, "not_signed_in", "sign in first")
    session = workspace_session_of(request)
    if posted and not session.csrf_ok(request.headers.get(CSRF_HEADER)):
        raise ApiError(403, "bad_csrf", "the page is stale or forged; reload it and try again")
    job = await views.own_job(request, person)
    if job is None:
        raise ApiError(404, "job_not_found", "there is no such recording among yours")
    return job


async def _for_person(request: Request, respond: _Answer, *, posted: bool) -> Response:
    try:
        return await respond(request, await _own_job(request, posted=posted))
    except ApiError as exc:
        return error_response(exc)


async def read(request: Request) -> Response:
    """``GET /w/recordings/{id}/summary``: the summary and its state."""
    return await _for_person(request, summaries.read_summary, posted=False)


async def generate(request: Request) -> Response:
    """``POST /w/recordings/{id}/summary``: queue (again) the summary (202)."""
    return await _for_person(request, summaries.queue_summary, posted=True)


async def ask(request: Request) -> Response:
    """``POST /w/recordings/{id}/ask``: ``{"question"}`` answered with its quotes."""
    return await _for_person(request, summaries.answer, posted=True)
