"""``MemoryDatabase``: what the memory stores keep, shareable between store objects like a file.

Two store objects on one ``MemoryDatabase`` are two independent instances
on the same data, as two SQLite connections on one file are: the contract
suites race them against each other. One lock guards every table, so each
store method is atomic from tasks and threads alike, whichever object runs it.
"""

from __future__ import annotations

import threading
from datetime import date, datetime, timedelta

from transcriber_adapters.system import SystemClock
from transcriber_core.budgets import Bucket
from transcriber_core.entities import (
    Condition,
    Delivery,
    FileRecord,
    Job,
    JobPart,
    LoginFailures,
    OwnerSession,
    Print,
    Voice,
)
from transcriber_core.people import (
    Invite,
    LinkCode,
    LinkedChat,
    Person,
    PersonSession,
    PersonToken,
)
from transcriber_core.ports import Clock
from transcriber_core.summaries import Summary
from transcriber_core.usage import Charge


class MemoryDatabase:
    """The tables of the memory stores and the one clock they judge time by."""

    def __init__(self, clock: Clock | None = None) -> None:
        #: The store's clock: every time a memory store stamps or compares comes from it.
        self.clock: Clock = clock or SystemClock()
        self.lock = threading.Lock()
        self.jobs: dict[str, Job] = {}
        self.files: dict[str, FileRecord] = {}
        #: dedup key -> id of the job that first used it.
        self.dedup: dict[str, str] = {}
        #: job id -> part index -> part.
        self.parts: dict[str, dict[int, JobPart]] = {}
        #: sweep name -> when its lease expires.
        self.sweeps: dict[str, datetime] = {}
        #: budget name -> (bucket, capacity, period).
        self.buckets: dict[str, tuple[Bucket, int, timedelta]] = {}
        #: (budget name, holder) -> when the token promised to the holder is due (ADR 61).
        self.turns: dict[tuple[str, str], datetime] = {}
        #: (code, scope) -> condition.
        self.conditions: dict[tuple[str, str], Condition] = {}
        #: The owner's password hash; None while there is no owner.
        self.owner_hash: str | None = None
        #: Session id hash -> session.
        self.sessions: dict[str, OwnerSession] = {}
        #: Client -> its login failures.
        self.failures: dict[str, LoginFailures] = {}
        #: The outbox (ADR 35): delivery id -> delivery, and the next id to give.
        self.deliveries: dict[int, Delivery] = {}
        self.next_delivery = 1
        #: The workspace's people (ADR 55): id -> person, invite hash -> (invite, used).
        self.people: dict[str, Person] = {}
        self.invites: dict[str, tuple[Invite, bool]] = {}
        #: Token hash -> token; session id hash -> session.
        self.person_tokens: dict[str, PersonToken] = {}
        self.person_sessions: dict[str, PersonSession] = {}
        #: Telegram link codes (ADR 60): code hash -> (code, used); chat id -> its link.
        self.link_codes: dict[str, tuple[LinkCode, bool]] = {}
        self.person_chats: dict[int, LinkedChat] = {}
        #: Seconds sent (ADR 59): job id -> (its charge, the UTC day it counts on).
        self.usage: dict[str, tuple[Charge, date]] = {}
        #: Remembered voices (ADR 72): voice id -> the voice and its print (a sum of samples).
        self.voices: dict[str, tuple[Voice, Print]] = {}
        #: Summaries (ADR 83): job id -> its summary; they go with their jobs.
        self.summaries: dict[str, Summary] = {}

    def clear(self) -> None:
        """Forget every row of every table."""
        with self.lock:
            self.jobs.clear()
            self.files.clear()
            self.dedup.clear()
            self.parts.clear()
            self.sweeps.clear()
            self.buckets.clear()
            self.turns.clear()
            self.conditions.clear()
            self.owner_hash = None
            self.sessions.clear()
            self.failures.clear()
            self.deliveries.clear()
            self.next_delivery = 1
            self.people.clear()
            self.invites.clear()
            self.person_tokens.clear()
            self.person_sessions.clear()
            self.usage.clear()
            self.link_codes.clear()
            self.person_chats.clear()
            self.voices.clear()
            self.summaries.clear()


def database_for(clock: Clock | None, database: MemoryDatabase | None) -> MemoryDatabase:
    """The database a memory store works on: the one given, or a private one on ``clock``.

    A store given both must be given the database's own clock: one database,
    one clock, as with a real server.
    """
    if database is None:
        return MemoryDatabase(clock)
    if clock is not None and clock is not database.clock:
        raise ValueError("a memory store on a shared database uses that database's clock")
    return database
