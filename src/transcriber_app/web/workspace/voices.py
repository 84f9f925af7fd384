"""The workspace's voices (SPEC §25, ADR 72): "Remember this voice" on a recording, the Voices page.

``POST /w/recordings/{id}/voices`` makes a speaker of one's recording a
named voice, or adds it to one of one's voices (a sample); ``GET /w/voices``
lists one's voices, ``POST /w/voices/{id}/rename`` and ``/delete`` change
them. Plain forms with the CSRF token, as every workspace form (ADR 56);
the core's use cases decide, and no page ever holds a print.
"""

from __future__ import annotations

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
from transcriber_core import naming, voices
from transcriber_core.errors import JobNotFound, VoiceNotFound, VoiceRefused
from transcriber_core.people import Person
from transcriber_core.ports import VoiceStore

log = logging.getLogger("transcriber.workspace")

#: The Voices page.
VOICES_URL = f"{PREFIX}/voices"


def _store(request: Request) -> VoiceStore:
    store = runtime_of(request).services.voices
    if store is None:  # pragma: no cover - the composition root always sets one
        raise RuntimeError("no voice store")
    return store


async def _page(
    request: Request, person: Person, *, problem: str | None = None, status_code: int = 200
) -> Response:
    found = await _store(request).list_voices(person.owner_key)
    context = {"voices": found, "problem": problem, "nav": "voices"}
    return views.render(request, "voices.html", context, person=person, status_code=status_code)


@views.person_page
async def voices_page(request: Request, person: Person) -> Response:
    """``GET /w/voices``: one's remembered voices, each with rename and delete."""
    return await _page(request, person)


def _voice_id(request: Request) -> str:
    """The path's voice id; "" (no voice's) for one no id could be, never sent to a database."""
    voice_id: str = request.path_params["voice_id"]
    return voice_id if naming.well_formed_id(voice_id) else ""


@views.person_action
async def rename(request: Request, form: FormData, person: Person) -> Response:
    """``POST /w/voices/{id}/rename``: a new name; recordings named before keep theirs."""
    store, owner = _store(request), person.owner_key
    try:
        voice = await voices.rename_voice(
            store, owner=owner, voice_id=_voice_id(request), name=form_text(form, "name")
        )
    except VoiceNotFound:
        return await _page(request, person, problem=_("No such voice of yours."), status_code=404)
    except VoiceRefused as exc:
        problem = _("Not renamed: %(reason)s.", reason=exc)
        return await _page(request, person, problem=problem, status_code=400)
    session_of(request).flash(_("Voice renamed to %(name)s.", name=voice.name))
    return Response(status_code=303, headers={"Location": VOICES_URL})


@views.person_action
async def delete(request: Request, _form: FormData, person: Person) -> Response:
    """``POST /w/voices/{id}/delete``: the voice and its print are gone."""
    try:
        await voices.delete_voice(
            _store(request), owner=person.owner_key, voice_id=_voice_id(request)
        )
    except VoiceNotFound:
        return await _page(request, person, problem=_("No such voice of yours."), status_code=404)
    session_of(request).flash(_("Voice deleted."))
    return Response(status_code=303, headers={"Location": VOICES_URL})


@views.person_action
async def remember(request: Request, form: FormData, person: Person) -> Response:
    """``POST /w/recordings/{id}/voices``: a speaker becomes a voice, or a sample of one.

    ``speaker`` names the speaker; ``voice`` one of one's voices to add it
    to, else ``name`` names a new voice. The speaker is named after the voice
    in this recording at once, and in one's later recordings when it matches.
    """
    job = await views.own_job(request, person)
    if job is None:
        return views.not_found(request, person)
    services = runtime_of(request).services
    store = _store(request)
    speaker = form_text(form, "speaker")
    chosen = form_text(form, "voice")
    if chosen and not naming.well_formed_id(chosen):
        return views.not_found(request, person)
    try:
        if chosen:
            voice = await voices.add_sample(
                services,
                store,
                owner=person.owner_key,
                voice_id=chosen,
                job_id=job.id,
                speaker=speaker,
            )
            said = _("Added to the voice %(name)s.", name=voice.name)
        else:
            voice = await voices.remember_voice(
                services,
                store,
                owner=person.owner_key,
                job_id=job.id,
                speaker=speaker,
                name=form_text(form, "name"),
            )
            said = _(
                "Voice remembered as %(name)s: your new recordings will name it.", name=voice.name
            )
    except (JobNotFound, VoiceNotFound):
        return views.not_found(request, person)
    except VoiceRefused as exc:
        session_of(request).flash(_("Not remembered: %(reason)s.", reason=exc))
        return _back_to(job.id)
    session_of(request).flash(said)
    return _back_to(job.id)


def _back_to(job_id: str) -> Response:
    return Response(
        status_code=303, headers={"Location": views.recording_url(job_id) + "#speakers"}
    )
