"""Sending recordings from the workspace: the upload page and the endpoint its script posts to.

``GET /w/upload`` shows a drop zone and a file input (several files at
once), a "Paste a link" input (SPEC §28: the form's ``url`` instead of a
file, where the service fetches links), the ``language`` and ``speakers``
choices of SPEC §18 as this service accepts them, and a row per file with a progress bar
(``upload.js``). Each file is its own ``POST /w/upload``: the multipart form
of ``POST /api/audio`` (``file``, ``language``, ``speakers``), with the
session's CSRF token in ``X-CSRF-Token``. It goes through the API's own
intake (``web.intake``, the one way in): the same limits, fields, errors (JSON with
the same stable codes) and metrics, the job stored as the person's. Only
the gate differs: a signed-in person and the token, checked before a byte
of the body is read; a refusal then closes the connection, the body unread.
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from transcriber_app.web.api.handlers import refuse_unfit_body
from transcriber_app.web.errors import ApiError, error_response
from transcriber_app.web.intake import SPEAKERS_FIELD, intake
from transcriber_app.web.language import _, format_number, ngettext, spoken_names
from transcriber_app.web.sessions import session_of
from transcriber_app.web.state import runtime_of
from transcriber_app.web.uploads import CLOSE
from transcriber_app.web.workspace import views
from transcriber_app.web.workspace.corrections import CSRF_HEADER
from transcriber_core import speakers
from transcriber_core.fetching import MAX_LINK_CHARS
from transcriber_core.languages import AUTO
from transcriber_core.people import Person
from transcriber_core.speakers import MAX_SPEAKERS, wanted_text


def size_limit_text(size: int) -> str:
    """A size limit for people: ``8 GiB``, ``500 MiB``, ``1.5 KiB``, ``900 bytes``."""
    for unit, scale in (("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024)):
        if size >= scale:
            return f"{format_number(round(size / scale, 1))} {unit}"
    return ngettext("%(num)s byte", "%(num)s bytes", size, num=format_number(size))


async def _person(request: Request, *, again: bool = False) -> Person:
    """The signed-in person whose page sent the request with its CSRF token; else 403.

    ``again``: read the person from the store once more (they may have been disabled).
    """
    person = await (views.signed_in_again if again else views.signed_in)(request)
    if person is None:
        raise ApiError(403, "not_signed_in", "sign in first")
    if not session_of(request).csrf_ok(request.headers.get(CSRF_HEADER)):
        raise ApiError(403, "bad_csrf", "the page is stale or forged; reload it and try again")
    return person


async def _admit(request: Request) -> tuple[str | None, str | None]:
    """The person's owner key, before the body: signed in, the CSRF header, a body that fits."""
    try:
        person = await _person(request)
        refuse_unfit_body(request)
    except ApiError as exc:
        exc.headers = {**(exc.headers or {}), **CLOSE}
        raise
    # No Idempotency-Key: each file of the page is sent once, by a person who sees it go.
    return person.owner_key, None


async def _still_signed_in(request: Request) -> str | None:
    """The person's owner key once the body is in: still signed in, still the CSRF header."""
    return (await _person(request, again=True)).owner_key


async def send(request: Request) -> Response:
    """``POST /w/upload``: one recording into the person's jobs: 202 ``{"job_id"}``, or 4xx JSON."""
    try:
        return await intake(request, _admit, _still_signed_in)
    except ApiError as exc:
        return error_response(exc)


@views.person_page
async def upload_page(request: Request, person: Person) -> Response:
    """``GET /w/upload``: the drop zone, the file input, the language and speakers choices."""
    runtime = runtime_of(request)
    services = runtime.services
    languages = services.recognizer.abilities.languages
    labels = speakers.labels_speakers(services)
    default = runtime.config.diarization.default
    context = {
        "languages": [(AUTO, _("detect it")), *spoken_names(languages)],
        "speaker_choices": ["off", "auto", *map(str, range(1, MAX_SPEAKERS + 1))] if labels else [],
        "speakers_default": wanted_text(speakers.parse_wanted(default)) if labels else "off",
        "speakers_field": SPEAKERS_FIELD,
        "max_bytes": services.settings.max_record_bytes,
        "limit": size_limit_text(services.settings.max_record_bytes),
        # "Paste a link" (SPEC §28) where this service fetches links.
        "links": services.fetcher is not None,
        "max_link_chars": MAX_LINK_CHARS,
        "link_limit": size_limit_text(services.fetch_limits.max_bytes),
        "nav": "upload",
    }
    return views.render(request, "upload.html", context, person=person)
