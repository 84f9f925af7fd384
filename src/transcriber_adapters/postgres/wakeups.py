"""``PostgresWakeupFeed``: the LISTEN side of the wake-up feed across processes (ADR 32).

Whoever makes work ready sends ``pg_notify(WAKEUP_CHANNEL, state)`` in the
same statement or transaction that makes it ready (the job repository, on
commit); every process listening on the database hears it and wakes its
idle loops of that step, in milliseconds instead of at the next poll.

One listening connection per process, outside the pool (it stays open for
the process's life). When it drops, the feed reconnects with the back-off of
``policy.reconnect_pause`` and, once listening again, wakes every step once:
a wake-up sent while nobody listened is not waited for until the next poll.
A connection that dies without a word (a host or a network gone) is found
by TCP keepalives, not by a query: an idle process costs the database only
its poller's query a second (docs/benchmarks.md). The 1 s poll stays the
fallback; the feed never raises.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from psycopg import AsyncConnection

from transcriber_core.entities import STEP_STATES, State
from transcriber_core.policy import DEFAULT_SETTINGS, Settings, reconnect_pause

#: The channel wake-ups travel on; its payload is a step state's value ("convert", ...).
WAKEUP_CHANNEL = "transcriber_wakeup"
#: How the listening connection shows in ``pg_stat_activity``.
APPLICATION_NAME = "transcriber-wakeups"
#: Seconds one connection attempt may take.
_CONNECT_TIMEOUT = 10
#: TCP keepalives on the listening connection (libpq's): probed after this many seconds
#: of silence, then every ``_KEEPALIVE_INTERVAL`` s, declared dead after
#: ``_KEEPALIVE_COUNT`` unanswered probes (about a minute). The kernel sends them; the
#: server sees no query.
_KEEPALIVE_IDLE = 30
_KEEPALIVE_INTERVAL = 10
_KEEPALIVE_COUNT = 3

_STEP_STATES = {state.value: state for state in STEP_STATES}

log = logging.getLogger("transcriber.postgres")


class PostgresWakeupFeed:
    """The ``WakeupFeed`` port on PostgreSQL ``LISTEN``; one per process."""

    def __init__(self, url: str, *, settings: Settings = DEFAULT_SETTINGS) -> None:
        """Listen on the database at ``url`` (never logged: it may hold a password)."""
        self._url = url
        self._settings = settings

    async def listen(self, notify: Callable[[State], None]) -> None:
        """Call ``notify(state)`` for each wake-up until cancelled; reconnects, never raises."""
        failures = 0
        while True:
            await asyncio.sleep(reconnect_pause(failures, self._settings).total_seconds())
            listening = False
            try:
                conn = await AsyncConnection.connect(
                    self._url,
                    autocommit=True,
                    application_name=APPLICATION_NAME,
                    connect_timeout=_CONNECT_TIMEOUT,
                    keepalives=1,
                    keepalives_idle=_KEEPALIVE_IDLE,
                    keepalives_interval=_KEEPALIVE_INTERVAL,
                    keepalives_count=_KEEPALIVE_COUNT,
                )
                async with conn:
                    await conn.execute(f"LISTEN {WAKEUP_CHANNEL}")
                    listening = True
                    log.info("postgres.wakeups_listening")
                    for state in STEP_STATES:
                        notify(state)
                    await self._relay(conn, notify)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # noqa: BLE001 - the feed outlives any failure; the poll covers
                # A connection that worked is retried soon; failed tries in a row back off.
                failures = 1 if listening else failures + 1
                # The class only: a driver's message may name the host or the user.
                log.warning(
                    "postgres.wakeups_lost",
                    extra={"error": type(exc).__name__, "failures": failures},
                )

    async def _relay(self, conn: AsyncConnection[object], notify: Callable[[State], None]) -> None:
        """Hand each notification's state to ``notify`` until the connection fails (it raises)."""
        async for message in conn.notifies():
            state = _STEP_STATES.get(message.payload)
            if state is not None:
                notify(state)
