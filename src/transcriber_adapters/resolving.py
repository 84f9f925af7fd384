"""Name resolution for connections made on someone's say-so (webhooks, links' fetches).

Both resolve a name once, check every address it gave against
``transcriber_core.addresses`` and connect to an address they checked, so
no second lookup can answer differently (no DNS rebinding window).
``Lookup`` lets tests answer for names of their own.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Awaitable, Callable
from typing import Any

#: ``loop.getaddrinfo``'s shape: host, port, family, socket type → address infos.
Lookup = Callable[[str, int, int, int], Awaitable[list[Any]]]


async def resolve(
    host: str,
    port: int,
    family: socket.AddressFamily = socket.AF_UNSPEC,
    *,
    lookup: Lookup | None = None,
) -> list[Any]:
    """``getaddrinfo`` for TCP (or ``lookup``), off the loop; ``OSError`` when it fails."""
    try:
        if lookup is None:
            loop = asyncio.get_running_loop()
            infos = await loop.getaddrinfo(host, port, family=family, type=socket.SOCK_STREAM)
        else:
            infos = await lookup(host, port, family, socket.SOCK_STREAM)
    except UnicodeError as error:
        raise OSError("the name is not valid") from error
    return list(infos)
