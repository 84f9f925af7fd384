"""Installable on a phone (SPEC §26): the web app manifest, its icons and ``/favicon.ico``.

Every page of both sides links the manifest and the icons (their ``base.html``).
The manifest's ``share_target`` sends audio and video files shared from
another app to ``POST /w/share`` (``workspace.share``, ADR 80). The icons are
drawn from ``static/icon.svg`` by ``scripts/icons.py`` and committed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles

#: The icons and the favicon.
STATIC = Path(__file__).parent / "static"
#: Where a share from another app is posted (the workspace's route).
SHARE_ACTION = "/w/share"
#: The form field the shared files come in: the upload's own ``file``.
SHARE_FILES_FIELD = "file"
#: The app's colour: the header bar's.
THEME_COLOUR = "#1d2430"
#: A day: the icons change only with a release.
ICON_CACHE = "public, max-age=86400"

MANIFEST: dict[str, Any] = {
    "name": "transcriber",
    "short_name": "transcriber",
    "description": "Your recordings, transcribed on your own server.",
    "id": "/w/",
    "start_url": "/w/",
    "scope": "/",
    "display": "standalone",
    "background_color": "#f6f7f9",
    "theme_color": THEME_COLOUR,
    "icons": [
        {"src": "/icons/icon-192.png", "sizes": "192x192", "type": "image/png"},
        {"src": "/icons/icon-512.png", "sizes": "512x512", "type": "image/png"},
        {"src": "/icons/icon.svg", "sizes": "any", "type": "image/svg+xml"},
    ],
    "share_target": {
        "action": SHARE_ACTION,
        "method": "POST",
        "enctype": "multipart/form-data",
        "params": {
            "files": [{"name": SHARE_FILES_FIELD, "accept": ["audio/*", "video/*"]}],
        },
    },
}


async def manifest(request: Request) -> Response:
    """``GET /manifest.webmanifest``: the app's name, icons, start page and share target."""
    return JSONResponse(
        MANIFEST, media_type="application/manifest+json", headers={"Cache-Control": "no-cache"}
    )


async def favicon(request: Request) -> Response:
    """``GET /favicon.ico``: the icon browsers ask for on their own, on every page."""
    return FileResponse(
        STATIC / "favicon.ico",
        media_type="image/vnd.microsoft.icon",
        headers={"Cache-Control": ICON_CACHE},
    )


def routes() -> list[BaseRoute]:
    """The manifest, the favicon and ``/icons/*``."""
    return [
        Route("/manifest.webmanifest", manifest, methods=["GET"]),
        Route("/favicon.ico", favicon, methods=["GET"]),
        Mount("/icons", app=StaticFiles(directory=STATIC), name="icons"),
    ]
