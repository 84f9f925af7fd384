"""The HTTP side: API, admin panel and probes on serve's port; the probes alone on a worker's."""

from __future__ import annotations

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import RedirectResponse
from starlette.routing import BaseRoute, Route

from transcriber_app.bootstrap import Runtime
from transcriber_app.web import admin as admin_panel
from transcriber_app.web import api, installable, probes, telegram, workspace
from transcriber_app.web.auth import AdminState
from transcriber_app.web.metrics import Metrics
from transcriber_app.web.redirects import LocalRedirects


def create_app(
    runtime: Runtime, metrics: Metrics | None = None, *, admin: AdminState | None = None
) -> Starlette:
    """The Starlette app over a built runtime; routes reach it as ``request.app.state.runtime``.

    ``metrics`` counts the worker's events only while its ``watching()``
    block runs (``serve`` holds it); without one, a fresh, unwatched set.
    ``admin`` is the panel's state from ``prepare_admin`` (setup link, trusted
    proxies); without one, no setup link works and no proxy is trusted.
    """
    admin = admin or AdminState()
    routes: list[BaseRoute] = [
        Route("/", _home, methods=["GET"]),
        *api.routes(),
        *telegram.routes(),
        *installable.routes(),
        admin_panel.mount(),
        workspace.mount(),
    ]
    app = Starlette(
        routes=routes,
        exception_handlers=api.exception_handlers(),
        # Starlette's trailing-slash redirects would send a client to its own Host header.
        middleware=[Middleware(LocalRedirects)],
    )
    app.state.runtime = runtime
    app.state.admin = admin
    app.state.metrics = metrics or Metrics()
    return app


async def _home(request: Request) -> RedirectResponse:
    """``GET /``: a person who opens the service's address lands on the admin panel."""
    return RedirectResponse("/admin/", status_code=303)


def create_probe_app(runtime: Runtime, metrics: Metrics) -> Starlette:
    """``/health`` and ``/metrics`` alone, for ``transcriber worker`` (ADR 38)."""
    app = Starlette(
        routes=probes.routes(),
        exception_handlers=api.exception_handlers(),
        middleware=[Middleware(LocalRedirects)],
    )
    app.state.runtime = runtime
    app.state.metrics = metrics
    return app
