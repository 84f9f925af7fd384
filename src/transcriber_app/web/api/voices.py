"""``/api/voices``: a caller's remembered voices (SPEC §25, ADR 72), and their answers.

A voice belongs to the caller's owner key: a person's (any of their tokens)
or a static token's. An open API's anonymous caller has none, and is
answered 401. No answer carries a print: ``VoiceBody`` has no field for it.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import TypeVar

import attrs
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from transcriber_app.web.api.auth import require_token
from transcriber_app.web.api.handlers import job_not_found, unavailable
from transcriber_app.web.errors import ApiError
from transcriber_app.web.schemas import doc, to_json
from transcriber_app.web.state import runtime_of
from transcriber_app.web.streams import read_json_object
from transcriber_core import naming, voices
from transcriber_core.entities import Voice
from transcriber_core.errors import (
    JobNotFound,
    TranscriberError,
    VoiceNotFound,
    VoiceRefused,
)
from transcriber_core.ports import VoiceStore
from transcriber_core.services import Services

log = logging.getLogger("transcriber.http")

T = TypeVar("T")

#: The largest body a voices route reads: an id, a speaker and a name of 64 characters fit.
MAX_VOICE_BODY_BYTES = 4 * 1024
#: The HTTP status of each refusal of a recording's speaker.
REFUSAL_STATUS = {"not_done": 409, "no_speakers": 400, "bad_speaker": 400, "bad_name": 400}


@attrs.frozen(kw_only=True)
class VoiceBody:
    """A remembered voice as the API shows it: never its print."""

    id: str = attrs.field(
        metadata=doc("the voice's id, for its routes and in a speaker's voice_id")
    )
    name: str = attrs.field(metadata=doc("the name its matched speakers get"))
    created: datetime
    samples: int = attrs.field(metadata=doc("recordings' speakers it was made from"))

    @classmethod
    def of(cls, voice: Voice) -> VoiceBody:
        """The answer's view of ``voice``."""
        return cls(id=voice.id, name=voice.name, created=voice.created, samples=voice.samples)


@attrs.frozen(kw_only=True)
class VoiceList:
    """The caller's voices, oldest first."""

    voices: tuple[VoiceBody, ...]


def voice_not_found() -> ApiError:
    """The one 404 of a voice: unknown, deleted, or another owner's are answered alike."""
    return ApiError(404, "voice_not_found", "no voice of yours has this id")


async def _caller(request: Request) -> tuple[Services, VoiceStore, str]:
    """The services, the voice store and the caller's owner key; 401 for an anonymous caller."""
    owner = await require_token(request)
    services = runtime_of(request).services
    if owner is None:
        raise ApiError(
            401,
            "unauthorized",
            "voices belong to a token or a person: send a bearer token",
            headers={"WWW-Authenticate": "Bearer"},
        )
    if services.voices is None:  # pragma: no cover - the composition root always sets one
        raise unavailable()
    return services, services.voices, owner


async def _answered(work: Callable[[], Awaitable[T]]) -> T:
    """``work``'s result, its refusals as the API's errors."""
    try:
        return await work()
    except JobNotFound:
        raise job_not_found() from None
    except VoiceNotFound:
        raise voice_not_found() from None
    except VoiceRefused as exc:
        raise ApiError(REFUSAL_STATUS[exc.code], exc.code, exc.message) from None
    except TranscriberError as exc:
        log.warning("voices.error", extra={"error_type": type(exc).__name__})
        raise unavailable() from None


def _voice_id(request: Request) -> str:
    """The path's voice id; 404 for one no id could be."""
    voice_id: str = request.path_params["voice_id"]
    if not naming.well_formed_id(voice_id):
        raise voice_not_found()
    return voice_id


def _job_id(body: dict[str, object]) -> str:
    """The body's ``job_id``; 404 ``job_not_found`` for one no job could have."""
    job_id = body.get("job_id")
    if not isinstance(job_id, str) or not naming.well_formed_id(job_id):
        raise job_not_found()
    return job_id


async def _body(request: Request) -> dict[str, object]:
    return await read_json_object(
        request,
        max_bytes=MAX_VOICE_BODY_BYTES,
        code="bad_request",
        example=': {"job_id": "...", "speaker": "S1", "name": "Diane"}',
    )


async def create_voice(request: Request) -> Response:
    """``POST /api/voices``: a speaker of one of the caller's done recordings becomes a voice."""
    services, store, owner = await _caller(request)
    body = await _body(request)
    job_id = _job_id(body)
    voice = await _answered(
        lambda: voices.remember_voice(
            services,
            store,
            owner=owner,
            job_id=job_id,
            speaker=body.get("speaker"),
            name=body.get("name"),
        )
    )
    return JSONResponse(to_json(VoiceBody.of(voice)), status_code=201)


async def add_voice_sample(request: Request) -> Response:
    """``POST /api/voices/{id}/samples``: another recording's speaker of the same voice."""
    services, store, owner = await _caller(request)
    voice_id = _voice_id(request)
    body = await _body(request)
    job_id = _job_id(body)
    voice = await _answered(
        lambda: voices.add_sample(
            services,
            store,
            owner=owner,
            voice_id=voice_id,
            job_id=job_id,
            speaker=body.get("speaker"),
        )
    )
    return JSONResponse(to_json(VoiceBody.of(voice)))


async def list_voices(request: Request) -> Response:
    """``GET /api/voices``: the caller's voices, oldest first."""
    _, store, owner = await _caller(request)
    found = await _answered(lambda: store.list_voices(owner))
    return JSONResponse(to_json(VoiceList(voices=tuple(VoiceBody.of(v) for v in found))))


async def rename_voice(request: Request) -> Response:
    """``PATCH /api/voices/{id}``: ``{"name"}``; recordings already named keep their names."""
    _, store, owner = await _caller(request)
    voice_id = _voice_id(request)
    body = await _body(request)
    voice = await _answered(
        lambda: voices.rename_voice(store, owner=owner, voice_id=voice_id, name=body.get("name"))
    )
    return JSONResponse(to_json(VoiceBody.of(voice)))


async def delete_voice(request: Request) -> Response:
    """``DELETE /api/voices/{id}``: the voice and its print are gone (204)."""
    _, store, owner = await _caller(request)
    voice_id = _voice_id(request)
    await _answered(lambda: voices.delete_voice(store, owner=owner, voice_id=voice_id))
    return Response(status_code=204)
