"""Wake-ups across processes: ``PostgresWakeupFeed`` listens (ADR 32), ``WakeupSender`` sends.

Whoever makes work ready sends ``pg_notify(WAKEUP_CHANNEL, state)`` once
that write has committed (the job repository, through ``WakeupSender``,
ADR 39); every process listening on the database hears it and wakes its
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
from typing import LiteralString

from psycopg import AsyncConnection

from transcriber_adapters.postgres.connection import Database
from transcriber_core.entities import STEP_STATES, State
from transcriber_core.policy import DEFAULT_SETTINGS, Settings, reconnect_pause

#: The channel wake-ups travel on; its payload is a step state's value ("convert", ...).
WAKEUP_CHANNEL = "transcriber_wakeup"
#: The channel of jobs that ended or had a part recognised; its payload is the job id (ADR 46).
JOB_CHANNEL = "transcriber_job"
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

    async def listen(
        self,
        notify: Callable[[State], None],
        *,
        job_changed: Callable[[str], None] | None = None,
    ) -> None:
        """Call ``notify(state)`` for each wake-up until cancelled; reconnects, never raises.

        With ``job_changed`` it listens to ``JOB_CHANNEL`` too, and calls
        ``job_changed("")`` once listening again after a loss.
        """
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
                    if job_changed is not None:
                        await conn.execute(f"LISTEN {JOB_CHANNEL}")
                    listening = True
                    log.info("postgres.wakeups_listening")
                    for state in STEP_STATES:
                        notify(state)
                    if job_changed is not None:
                        job_changed("")
                    await self._relay(conn, notify, job_changed)
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

    async def _relay(
        self,
        conn: AsyncConnection[object],
        notify: Callable[[State], None],
        job_changed: Callable[[str], None] | None,
    ) -> None:
        """Hand each notification to ``notify`` or ``job_changed`` until the connection fails."""
        async for message in conn.notifies():
            if message.channel == JOB_CHANNEL:
                if job_changed is not None and message.payload:
                    job_changed(message.payload)
                continue
            state = _STEP_STATES.get(message.payload)
            if state is not None:
                notify(state)


def _notify_sql(state: State) -> LiteralString:
    # One simple-protocol query is one implicit transaction, so SET LOCAL covers the
    # notify only: its commit waits for no WAL flush while it holds the notify queue's
    # lock, and a wake-up lost in a crash costs one poll.
    return (
        f"SET LOCAL synchronous_commit = off; SELECT pg_notify('{WAKEUP_CHANNEL}', '{state.value}')"
    )


#: Tells the listeners of ``JOB_CHANNEL`` that a job changed; parameter ``job_id``.
_JOB_NOTIFY_SQL: LiteralString = f"SELECT pg_notify('{JOB_CHANNEL}', %(job_id)s)"

#: The one wake-up statement of each step state (no parameters: the simple protocol).
_NOTIFY_SQL: dict[State, LiteralString] = {state: _notify_sql(state) for state in STEP_STATES}


class WakeupSender:
    """The sending half: wakes a step after the write that made it ready committed (ADR 39).

    One per repository. A write's own ``pg_notify`` would hold the cluster's
    notify lock through its commit's WAL flush, and so serialise every
    notifying commit; here the write commits first (group commit applies),
    then ``wake`` sends a short transaction of its own. Coalesced: per state,
    one sending task at a time. The caller that starts it waits for its
    first wake-up; a caller that asks while it runs returns at once, and the
    task sends again after the wake-up in flight, so every ask is followed
    by a wake-up that started after it (a woken listener's acquire sees the
    job), and under load one wake-up serves many writes.
    """

    def __init__(self, database: Database) -> None:
        """Send on ``database``'s pool."""
        self._db = database
        self._asked = dict.fromkeys(STEP_STATES, 0)
        self._covered = dict.fromkeys(STEP_STATES, 0)
        self._sending: dict[State, asyncio.Task[None]] = {}
        #: Wake-ups sent per state since the start (for tests and benchmarks).
        self.sent = dict.fromkeys(STEP_STATES, 0)

    async def wake(self, state: State) -> None:
        """Make sure a wake-up of ``state`` starts after this call; call after the commit.

        Never raises for the database: the write it follows has committed, and
        a lost wake-up only waits for the poll.
        """
        self._asked[state] += 1
        loop = asyncio.get_running_loop()
        running = self._sending.get(state)
        if running is not None and running.get_loop() is loop:
            return  # the running task sends again once its wake-up in flight is out
        # (A task of a loop that ended mid-send never finished: start afresh on this one.)
        first = loop.create_future()
        self._sending[state] = asyncio.create_task(self._send_until_covered(state, first))
        await first

    async def job_changed(self, job_id: str) -> None:
        """Tell every listening process that ``job_id`` ended or advanced; call after the commit.

        Not coalesced: a job ends once and has a few parts. Never raises for
        the database: a waiter that misses it looks again at its poll.
        """
        try:
            async with self._db.connection() as conn:
                await conn.execute(_JOB_NOTIFY_SQL, {"job_id": job_id})
        except Exception as exc:  # noqa: BLE001 - the write stands; the waiter's poll finds it
            log.warning("postgres.job_notice_not_sent", extra={"error_type": type(exc).__name__})

    async def flush(self) -> None:
        """Wait until every wake-up asked for has been sent (or failed)."""
        loop = asyncio.get_running_loop()
        while tasks := [task for task in self._sending.values() if task.get_loop() is loop]:
            await asyncio.gather(*tasks)

    async def _send_until_covered(self, state: State, first: asyncio.Future[None]) -> None:
        try:
            # Nothing runs between a send's end and this test: an ask that the test
            # misses finds no task and starts its own.
            while self._covered[state] < self._asked[state]:
                self._covered[state] = self._asked[state]
                await self._send(state)
                if not first.done():
                    first.set_result(None)
        finally:
            if self._sending.get(state) is asyncio.current_task():
                del self._sending[state]
            if not first.done():
                first.set_result(None)

    async def _send(self, state: State) -> None:
        try:
            async with self._db.connection() as conn:
                await conn.execute(_NOTIFY_SQL[state], prepare=False)
        except Exception as exc:  # noqa: BLE001 - the write stands; the poll finds its job
            log.warning("postgres.wakeup_not_sent", extra={"error_type": type(exc).__name__})
            return
        self.sent[state] += 1
