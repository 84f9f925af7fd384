"""``AiohttpWebhookSender``: signed webhook POSTs on aiohttp, connecting only to checked addresses.

The rules are the core's (``transcriber_core.webhooks``); this module resolves
and sends. A name is resolved by our own resolver, which refuses the whole
name when any of its addresses is refused and hands aiohttp only the
addresses it checked, so the connection goes where the check looked (no
second lookup that DNS could answer differently). An address written in the
URL skips resolvers in aiohttp, so it is checked before the request. At
delivery a failed lookup or a refused answer for a name is a failed try,
retried (DNS may answer differently next time); at intake it refuses.
Redirects are never followed; anything but a 2xx is ``ReceiverUnavailable``.
Errors keep no vendor text and never the URL (its query may hold a secret).
"""

from __future__ import annotations

import ipaddress
import socket
import time
from datetime import timedelta

import aiohttp
from aiohttp.abc import AbstractResolver, ResolveResult

from transcriber_adapters import resolving
from transcriber_adapters.resolving import Lookup
from transcriber_core import webhooks
from transcriber_core.errors import CallbackRefused, ReceiverUnavailable
from transcriber_core.ports import Clock

#: The default whole-request timeout (SPEC §15: a hanging receiver is cut off after 10 s).
DEFAULT_TIMEOUT = 10.0
#: Why a callback's host was not used when it could not be resolved.
UNRESOLVED = "the callback's host does not resolve"
#: Tries one receiver may have running in one process at once (ADR 44).
PER_RECEIVER = 2
#: When a call to a receiver with ``PER_RECEIVER`` tries running is tried again.
BUSY_RETRY = timedelta(seconds=1)


class _StalledError(Exception):
    """A try that timed out or could not connect: the receiver pauses (never leaves this module)."""


class CheckedResolver(AbstractResolver):
    """Resolves with ``lookup``, then refuses names with any address not allowed.

    It runs at delivery, where one answer is not the last word: a lookup
    that fails, or a name that now points somewhere refused, is a failed
    try (``ReceiverUnavailable``), retried with the delivery's back-off,
    never a connection to the refused address.
    """

    def __init__(self, *, allow_private: bool, lookup: Lookup | None = None) -> None:
        self.allow_private = allow_private
        self._lookup = lookup

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        """The host's addresses, every one checked; ``ReceiverUnavailable`` otherwise."""
        try:
            infos = await resolving.resolve(host, port, family, lookup=self._lookup)
            webhooks.check_addresses(
                [str(info[4][0]) for info in infos], allow_private=self.allow_private
            )
        except OSError:
            raise ReceiverUnavailable(UNRESOLVED) from None
        except CallbackRefused as refused:
            raise ReceiverUnavailable(refused.message) from None
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


class AiohttpWebhookSender:
    """Checks callback URLs and POSTs signed bodies to them (the ``WebhookSender`` port).

    ``secret`` signs every body; ``clock`` gives the signature's time;
    ``allow_private`` lets callbacks reach loopback and private networks;
    ``timeout`` bounds a whole request, connection included; ``lookup``
    replaces the system resolver (tests).
    """

    def __init__(
        self,
        *,
        secret: str,
        clock: Clock,
        allow_private: bool = False,
        timeout: float = DEFAULT_TIMEOUT,
        lookup: Lookup | None = None,
    ) -> None:
        if not secret:
            raise ValueError("a webhook sender needs a secret")
        self._secret = secret
        self._clock = clock
        self.allow_private = allow_private
        self.timeout = timeout
        self._lookup = lookup
        self._session: aiohttp.ClientSession | None = None
        #: Per receiver (``webhooks.receiver_of``): tries running now in this process.
        self._in_flight: dict[str, int] = {}
        #: Per receiver: slow failures in a row, and the monotonic time before which
        #: it is not called (ADR 44).
        self._backoff: dict[str, tuple[int, float]] = {}

    async def check(self, url: str) -> None:
        """Refuse ``url`` with ``CallbackRefused`` unless its form and every address pass."""
        parts = webhooks.parse_callback_url(url)
        host = parts.hostname or ""
        if _is_address(host):
            webhooks.check_addresses([host], allow_private=self.allow_private)
            return
        try:
            infos = await resolving.resolve(host, parts.port or 0, lookup=self._lookup)
        except OSError:
            raise CallbackRefused(UNRESOLVED, code=webhooks.REFUSED_ADDRESS) from None
        webhooks.check_addresses(
            [str(info[4][0]) for info in infos], allow_private=self.allow_private
        )

    async def send(self, url: str, body: bytes) -> None:
        """POST ``body`` signed; return on a 2xx, else raise (see the port).

        A receiver with ``PER_RECEIVER`` tries already running here, or
        pausing after a try that timed out or could not connect, fails the
        call at once (``ReceiverUnavailable``, retried later by the outbox):
        a receiver that hangs holds one loop, not all of them (ADR 44).
        """
        parts = webhooks.parse_callback_url(url)
        host = parts.hostname or ""
        if _is_address(host):
            webhooks.check_addresses([host], allow_private=self.allow_private)
        receiver = webhooks.receiver_of(url)
        failures, until = self._backoff.get(receiver, (0, 0.0))
        now = time.monotonic()
        if now < until:
            raise ReceiverUnavailable(
                "the webhook receiver is pausing after a try it did not answer",
                retry_after=timedelta(seconds=until - now),
            )
        if self._in_flight.get(receiver, 0) >= PER_RECEIVER:
            raise ReceiverUnavailable(
                "the webhook receiver has as many tries running as it may",
                retry_after=BUSY_RETRY,
            )
        self._in_flight[receiver] = self._in_flight.get(receiver, 0) + 1
        try:
            await self._post(url, body)
        except _StalledError:
            pause = webhooks.receiver_pause(failures + 1)
            self._backoff[receiver] = (failures + 1, time.monotonic() + pause)
            raise ReceiverUnavailable("the webhook receiver could not be reached") from None
        except ReceiverUnavailable:
            # It answered (a 5xx, a redirect): slow to fail it is not.
            self._backoff.pop(receiver, None)
            raise
        else:
            self._backoff.pop(receiver, None)
        finally:
            left = self._in_flight[receiver] - 1
            if left:
                self._in_flight[receiver] = left
            else:
                del self._in_flight[receiver]

    async def _post(self, url: str, body: bytes) -> None:
        """One signed POST; ``_StalledError`` when it timed out or could not connect."""
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
        except (CallbackRefused, ReceiverUnavailable):
            raise
        except (aiohttp.ClientError, TimeoutError, OSError, ValueError):
            raise _StalledError() from None
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
                resolver=CheckedResolver(allow_private=self.allow_private, lookup=self._lookup),
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
