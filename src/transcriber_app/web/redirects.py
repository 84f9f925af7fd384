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

from starlette.types import ASGIApp, Message, Receive, Scope, Send

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


class LocalRedirects:
    """ASGI middleware: the ``Location`` of every answer made local with ``local_location``."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Pass the request through; rewrite the answer's ``Location`` header if it has one."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_local(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = message.get("headers", ())
                if any(name.lower() == b"location" for name, _ in headers):
                    message = {
                        **message,
                        "headers": [
                            (
                                name,
                                local_location(value.decode("latin-1")).encode("latin-1")
                                if name.lower() == b"location"
                                else value,
                            )
                            for name, value in headers
                        ],
                    }
            await send(message)

        await self.app(scope, receive, send_local)
