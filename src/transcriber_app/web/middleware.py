"""``AnswerHeaders``: our ASGI middleware's one shape: it edits the headers of each answer."""

from __future__ import annotations

from starlette.datastructures import MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send


class AnswerHeaders:
    """Wraps an ASGI app; ``edit`` changes each HTTP answer's headers before they are sent.

    ``enter`` runs first, before the wrapped app sees the request; other
    traffic (lifespan) passes through untouched.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Run ``enter``, then the app, with ``edit`` applied to the answer's start."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        await self.enter(scope)

        async def send_edited(message: Message) -> None:
            if message["type"] == "http.response.start":
                await self.edit(scope, MutableHeaders(scope=message))
            await send(message)

        await self.app(scope, receive, send_edited)

    async def enter(self, scope: Scope) -> None:
        """Work before the request reaches the app; nothing by default."""

    async def edit(self, scope: Scope, headers: MutableHeaders) -> None:
        """Change ``headers`` of the answer to the request of ``scope``."""
        raise NotImplementedError
