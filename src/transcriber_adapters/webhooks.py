"""``AiohttpWebhookSender``: signed webhook POSTs on aiohttp, connecting only to checked addresses.

The rules are the core's (``transcriber_core.webhooks``); this module resolves
and sends. A name is resolved by our own resolver, which refuses the whole
name when any of its addresses is refused and hands aiohttp only the
addresses it checked, so the connection goes where the check looked (no
second lookup that DNS could answer differently). An address written in the
URL skips resolvers in aiohttp, so it is checked before the request.
Redirects are never followed; anything but a 2xx is ``ReceiverUnavailable``.
Errors keep no vendor text and never the URL (its query may hold a secret).
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from typing import Any

import aiohttp
from aiohttp.abc import AbstractResolver, ResolveResult

from transcriber_core import webhooks
from transcriber_core.errors import CallbackRefused, ReceiverUnavailable
from transcriber_core.ports import Clock

#: The default whole-request timeout (SPEC §15: a hanging receiver is cut off after 10 s).
DEFAULT_TIMEOUT = 10.0


class CheckedResolver(AbstractResolver):
    """Resolves with the system resolver, then refuses names with any address not allowed."""

    def __init__(self, *, allow_private: bool) -> None:
        self.allow_private = allow_private

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        """The host's addresses, every one checked; ``CallbackRefused`` otherwise."""
        infos = await resolve_addresses(host, port, family)
        webhooks.check_addresses(
            [str(info[4][0]) for info in infos], allow_private=self.allow_private
        )
        return [
            {
                "hostname": host,
                "host": str(info[4][0]),
                "port": int(info[4][1]),
                "family": info[0],
                "proto": info[2],
                "flags": socket.AI_NUMERICHOST | socket.AI_NUMERICSERV,
            }
            for info in infos
        ]

    async def close(self) -> None:
        """Nothing to release."""


async def resolve_addresses(
    host: str, port: int, family: socket.AddressFamily = socket.AF_UNSPEC
) -> list[Any]:
    """``getaddrinfo`` for TCP, off the event loop; a failure is ``CallbackRefused``."""
    loop = asyncio.get_running_loop()
    try:
        infos = await loop.getaddrinfo(host, port, family=family, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError):
        raise CallbackRefused(
            "the callback's host does not resolve", code=webhooks.REFUSED_ADDRESS
        ) from None
    return list(infos)


class AiohttpWebhookSender:
    """Checks callback URLs and POSTs signed bodies to them (the ``WebhookSender`` port).

    ``secret`` signs every body; ``clock`` gives the signature's time;
    ``allow_private`` lets callbacks reach loopback and private networks;
    ``timeout`` bounds a whole request, connection included.
    """

    def __init__(
        self,
        *,
        secret: str,
        clock: Clock,
        allow_private: bool = False,
        timeout: float = DEFAULT_TIMEOUT,
    ) -> None:
        if not secret:
            raise ValueError("a webhook sender needs a secret")
        self._secret = secret
        self._clock = clock
        self.allow_private = allow_private
        self.timeout = timeout
        self._session: aiohttp.ClientSession | None = None

    async def check(self, url: str) -> None:
        """Refuse ``url`` with ``CallbackRefused`` unless its form and every address pass."""
        parts = webhooks.parse_callback_url(url)
        host = parts.hostname or ""
        if _is_address(host):
            webhooks.check_addresses([host], allow_private=self.allow_private)
            return
        infos = await resolve_addresses(host, parts.port or 0)
        webhooks.check_addresses(
            [str(info[4][0]) for info in infos], allow_private=self.allow_private
        )

    async def send(self, url: str, body: bytes) -> None:
        """POST ``body`` signed; return on a 2xx, else raise (see the port)."""
        parts = webhooks.parse_callback_url(url)
        host = parts.hostname or ""
        if _is_address(host):
            webhooks.check_addresses([host], allow_private=self.allow_private)
        timestamp = int(self._clock.now().timestamp())
        headers = {
            "Content-Type": "application/json",
            "User-Agent": "transcriber-webhooks",
            webhooks.SIGNATURE_HEADER: webhooks.signature(self._secret, timestamp, body),
        }
        try:
            async with self._client().post(
                url, data=body, headers=headers, allow_redirects=False
            ) as response:
                status = response.status
        except CallbackRefused:
            raise
        except (aiohttp.ClientError, TimeoutError, OSError, ValueError):
            raise ReceiverUnavailable("the webhook receiver could not be reached") from None
        if not 200 <= status < 300:
            raise ReceiverUnavailable(f"the webhook receiver answered {status}")

    async def close(self) -> None:
        """Close the connection pool."""
        if self._session is not None:
            await self._session.close()
            self._session = None

    def _client(self) -> aiohttp.ClientSession:
        if self._session is None:
            connector = aiohttp.TCPConnector(
                resolver=CheckedResolver(allow_private=self.allow_private),
                # Each request resolves and checks again: DNS may have changed.
                use_dns_cache=False,
            )
            self._session = aiohttp.ClientSession(
                connector=connector,
                timeout=aiohttp.ClientTimeout(total=self.timeout),
                # Proxies from the environment would connect somewhere we did not check.
                trust_env=False,
            )
        return self._session


def _is_address(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True
