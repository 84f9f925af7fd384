"""The workspace's routes, mounted under ``/w`` with its sessions and its security headers."""

from __future__ import annotations

from starlette.middleware import Middleware
from starlette.middleware.exceptions import ExceptionMiddleware
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from transcriber_app.web.admin.security import MAX_FORM_BYTES, WorkspaceHeaders
from transcriber_app.web.workspace import corrections, search, transcript, views
from transcriber_app.web.workspace.sessions import PREFIX, WorkspaceSessions


def mount() -> Mount:
    """The workspace under ``/w``: server-side sessions, a strict CSP on every answer."""
    routes = [
        Route("/", views.home, methods=["GET"]),
        Route("/login", views.login_page, methods=["GET"]),
        Route("/login", views.login_submit, methods=["POST"]),
        Route("/logout", views.logout, methods=["POST"]),
        Route("/invite", views.invite_page, methods=["GET"]),
        Route("/invite", views.invite_submit, methods=["POST"]),
        Route("/recordings/{job_id}", transcript.recording, methods=["GET"]),
        Route("/recordings/{job_id}/media", transcript.media, methods=["GET"]),
        Route("/recordings/{job_id}/speakers", transcript.rename_speaker, methods=["POST"]),
        # Corrections and downloads (ADR 57).
        Route("/recordings/{job_id}/words", corrections.save_words, methods=["POST"]),
        Route("/recordings/{job_id}/restore", corrections.restore, methods=["POST"]),
        Route("/recordings/{job_id}/transcript.{format}", corrections.download, methods=["GET"]),
        Route("/search", search.search, methods=["GET"]),
        Route("/tokens", views.tokens_page, methods=["GET"]),
        Route("/tokens", views.make_token, methods=["POST"]),
        Route("/tokens/{token_id}/revoke", views.revoke_token, methods=["POST"]),
        Mount("/static", app=StaticFiles(directory=views.HERE / "static"), name="workspace-static"),
    ]
    middleware = [
        Middleware(WorkspaceHeaders),
        Middleware(ExceptionMiddleware),
        Middleware(WorkspaceSessions),
    ]
    return Mount(PREFIX, routes=routes, middleware=middleware, max_body_size=MAX_FORM_BYTES)
