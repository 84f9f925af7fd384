"""Every redirect stays on this server: a ``Location`` header keeps only its path.

Starlette's trailing-slash redirect (``/admin`` → ``/admin/``, and inside
the admin mount ``/admin/login/`` → ``/admin/login``) builds an absolute
URL from the request's ``Host`` header, so a request that says
``Host: evil.example`` is sent to evil.example. The service never means to
send anyone to another host, so ``LocalRedirects`` rewrites every absolute
``Location`` to its path, query and fragment. It works on the answer, not
on the router, so it covers every router and mount, present and future.
"""

from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit

from starlette.datastructures import MutableHeaders
from starlette.types import Scope

from transcriber_app.web.middleware import AnswerHeaders

#: Characters a browser skips or reads as "/" at the start of a URL: after one
#: another, they would make a path into a host ("//evil.example", "/\\evil.example").
_LEADING = "/\\\t\r\n "


def local_location(location: str) -> str:
    """``location`` as a reference to a path on this server: no scheme, no host."""
    parts = urlsplit(location)
    if not (parts.scheme or parts.netloc or location.startswith(tuple(_LEADING))):
        return location  # relative to the current path ("login"): already on this server
    path = "/" + parts.path.lstrip(_LEADING)
    return urlunsplit(("", "", path, parts.query, parts.fragment))


class LocalRedirects(AnswerHeaders):
    """ASGI middleware: the ``Location`` of every answer made local with ``local_location``."""

    async def edit(self, scope: Scope, headers: MutableHeaders) -> None:
        """Rewrite the answer's ``Location`` header if it has one."""
        location = headers.get("location")
        if location is not None:
            headers["location"] = local_location(location)
