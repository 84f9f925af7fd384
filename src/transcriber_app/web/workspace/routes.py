"""The workspace's routes, mounted under ``/w`` with its sessions and its security headers."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from starlette.middleware import Middleware
from starlette.middleware.exceptions import ExceptionMiddleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Mount, Route, request_response
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp

from transcriber_app.web.admin.security import MAX_FORM_BYTES, WorkspaceHeaders
from transcriber_app.web.language import Languages
from transcriber_app.web.sessions import Sessions
from transcriber_app.web.workspace import (
    corrections,
    live,
    recordings,
    search,
    share,
    summaries,
    telegram,
    transcript,
    upload,
    views,
    voices,
)
from transcriber_app.web.workspace.views import PREFIX


def _route(path: str, endpoint: Callable[[Request], Awaitable[Response]], method: str) -> Route:
    """A page or form route: its body is bounded as the admin panel's forms are."""
    return Route(path, endpoint, methods=[method], max_body_size=MAX_FORM_BYTES)


def front_door() -> Route:
    """``GET /``: the one sign-in form, or one's home when signed in (ADR 76).

    The same page as ``/w/login``, with the workspace's sessions, language and
    headers around it; its form posts to ``/w/login``.
    """
    app: ASGIApp = request_response(views.login_page)
    for layer in (Sessions, ExceptionMiddleware, Languages, WorkspaceHeaders):
        app = layer(app)
    return Route("/", app, methods=["GET"])


def mount() -> Mount:
    """The workspace under ``/w``: server-side sessions, a strict CSP on every answer."""
    corrector = corrections.Corrector()
    routes: list[BaseRoute] = [
        _route("/", live.home, "GET"),
        _route("/recordings.json", live.recordings_json, "GET"),
        _route("/login", views.login_page, "GET"),
        _route("/login", views.login_submit, "POST"),
        _route("/logout", views.logout, "POST"),
        _route("/language", views.choose_language, "POST"),
        _route("/invite", views.invite_page, "GET"),
        _route("/invite", views.invite_submit, "POST"),
        _route("/upload", upload.upload_page, "GET"),
        # A recording's body is bounded by the API's intake ([storage] max_record_bytes).
        Route("/upload", upload.send, methods=["POST"]),
        # Files shared from another app (the manifest's share_target, ADR 80), bounded alike.
        Route("/share", share.share, methods=["POST"]),
        _route("/recordings/{job_id}", transcript.recording, "GET"),
        _route("/recordings/{job_id}/media", transcript.media, "GET"),
        _route("/recordings/{job_id}/speakers", transcript.rename_speaker, "POST"),
        # Its title and its deletion (SPEC §26, ADR 79).
        _route("/recordings/{job_id}/title", recordings.rename, "POST"),
        _route("/recordings/{job_id}/delete", recordings.confirm_delete, "GET"),
        _route("/recordings/{job_id}/delete", recordings.delete, "POST"),
        # Corrections and downloads (ADR 57).
        _route("/recordings/{job_id}/words", corrector.save_words, "POST"),
        _route("/recordings/{job_id}/restore", corrections.restore, "POST"),
        _route("/recordings/{job_id}/transcript.{format}", corrections.download, "GET"),
        # The Summary panel and the Ask box (SPEC §27): the API's answers, JSON with CSRF.
        _route("/recordings/{job_id}/summary", summaries.read, "GET"),
        _route("/recordings/{job_id}/summary", summaries.generate, "POST"),
        _route("/recordings/{job_id}/ask", summaries.ask, "POST"),
        # Voices remembered (ADR 72).
        _route("/recordings/{job_id}/voices", voices.remember, "POST"),
        _route("/voices", voices.voices_page, "GET"),
        _route("/voices/{voice_id}/rename", voices.rename, "POST"),
        _route("/voices/{voice_id}/delete", voices.delete, "POST"),
        _route("/search", search.search, "GET"),
        _route("/tokens", views.tokens_page, "GET"),
        _route("/tokens", views.make_token, "POST"),
        _route("/tokens/{token_id}/revoke", views.revoke_token, "POST"),
        # Telegram chats linked by one-time codes (ADR 60).
        _route("/telegram", telegram.telegram_page, "GET"),
        _route("/telegram/code", telegram.make_code, "POST"),
        _route("/telegram/{chat_id}/unlink", telegram.unlink, "POST"),
        Mount("/static", app=StaticFiles(directory=views.HERE / "static"), name="workspace-static"),
    ]
    middleware = [
        Middleware(WorkspaceHeaders),
        Middleware(Languages),
        Middleware(ExceptionMiddleware),
        Middleware(Sessions),
    ]
    return Mount(PREFIX, routes=routes, middleware=middleware)
