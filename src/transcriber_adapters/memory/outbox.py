"""The outbox half of ``MemoryJobRepository`` (ADR 35): deliveries in a dict, SQLite's rules."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Sequence
from datetime import datetime, timedelta

import attrs

from transcriber_adapters.memory.database import MemoryDatabase
from transcriber_core.entities import Delivery, DeliveryKind, Event, NewDelivery
from transcriber_core.errors import LeaseLost
from transcriber_core.ports import Clock


class MemoryOutbox:
    """Deliveries on the ``MemoryDatabase``; the repository that mixes it in provides ``_db``,
    ``_lock`` (the database's) and ``calls``.

    ``_write_deliveries`` is called by the repository under that lock, in the
    same critical section as the job's move: the transaction of memory.
    """

    _db: MemoryDatabase
    _lock: threading.Lock
    calls: list[str]

    @property
    def _deliveries(self) -> dict[int, Delivery]:
        return self._db.deliveries

    @property
    def _clock(self) -> Clock:
        return self._db.clock

    def _write_deliveries(self, job_id: str, deliveries: Sequence[NewDelivery]) -> None:
        """Add ``deliveries`` for the job; call with the lock held."""
        write_deliveries(self._db, job_id, deliveries)

    async def acquire_delivery(
        self,
        *,
        acquisition_id: str,
        lease: timedelta,
        job_id: str | None = None,
        kind: DeliveryKind | None = None,
    ) -> Delivery | None:
        """Lease the next due delivery (see the port for the rules); None when there is none."""
        with self._lock:
            self.calls.append("acquire_delivery")
            now = self._clock.now()
            eligible = [
                delivery
                for delivery in self._eligible(now, now - lease)
                if delivery.job_id == job_id
                or (job_id is None and (kind is None or delivery.kind is kind))
            ]
            if not eligible:
                return None
            chosen = min(eligible, key=lambda delivery: (delivery.due, delivery.id))
            leased = attrs.evolve(
                chosen,
                acquisition_id=acquisition_id,
                acquire_time=now,
                attempts=chosen.attempts + 1,
            )
            self._deliveries[leased.id] = leased
            return leased

    async def retry_delivery(
        self, delivery: Delivery, *, acquisition_id: str, delay: timedelta, error: str
    ) -> None:
        """Give the lease back, due ``delay`` from now; ``LeaseLost`` unless held."""
        with self._lock:
            self.calls.append("retry_delivery")
            stored = self._held(delivery.id, acquisition_id)
            self._deliveries[stored.id] = attrs.evolve(
                stored,
                acquisition_id=None,
                acquire_time=None,
                due=self._clock.now() + delay,
                last_error=error,
            )

    async def finish_delivery(self, delivery: Delivery, *, acquisition_id: str) -> None:
        """Remove a delivery sent or given up; ``LeaseLost`` unless held."""
        with self._lock:
            self.calls.append("finish_delivery")
            self._held(delivery.id, acquisition_id)
            del self._deliveries[delivery.id]

    async def save_status_message(
        self, delivery: Delivery, message_id: int, *, acquisition_id: str
    ) -> None:
        """Note the job's status message if ``acquisition_id`` holds ``delivery``."""
        with self._lock:
            self.calls.append("save_status_message")
            self._held(delivery.id, acquisition_id)
            job = self._db.jobs.get(delivery.job_id)
            if job is not None:
                self._db.jobs[job.id] = attrs.evolve(job, status_message_id=message_id)

    async def pending_deliveries(self) -> dict[DeliveryKind, int]:
        """How many deliveries of each kind wait or run."""
        with self._lock:
            self.calls.append("pending_deliveries")
            return dict(Counter(delivery.kind for delivery in self._deliveries.values()))

    def _held(self, delivery_id: int, acquisition_id: str) -> Delivery:
        stored = self._deliveries.get(delivery_id)
        if stored is None or stored.acquisition_id != acquisition_id:
            raise LeaseLost()
        return stored

    def _eligible(self, now: datetime, cutoff: datetime) -> list[Delivery]:
        """Due, unleased, first of its job and kind, and no other of its job in flight."""
        waiting = self._deliveries.values()
        first: dict[tuple[str, DeliveryKind], int] = {}
        busy: set[str] = set()
        for delivery in waiting:
            key = (delivery.job_id, delivery.kind)
            first[key] = min(first.get(key, delivery.id), delivery.id)
            if _live(delivery, cutoff):
                busy.add(delivery.job_id)
        return [
            delivery
            for delivery in waiting
            if delivery.due <= now
            and first[delivery.job_id, delivery.kind] == delivery.id
            and not _live(delivery, cutoff)
            and delivery.job_id not in busy
        ]


def _live(delivery: Delivery, cutoff: datetime) -> bool:
    """True while a loop holds ``delivery``: a lease taken after the cutoff."""
    return (
        delivery.acquisition_id is not None
        and delivery.acquire_time is not None
        and delivery.acquire_time > cutoff
    )


def write_deliveries(db: MemoryDatabase, job_id: str, deliveries: Sequence[NewDelivery]) -> None:
    """Add ``deliveries`` for the job to ``db``'s outbox; call with its lock held."""
    now = db.clock.now()
    for new in deliveries:
        if new.event is Event.PROGRESS and any(
            waiting.job_id == job_id
            and waiting.kind is new.kind
            and waiting.event is Event.PROGRESS
            and waiting.acquisition_id is None
            for waiting in db.deliveries.values()
        ):
            # One waiting progress notice shows the job as it is when sent (ADR 51).
            continue
        delivery = Delivery(
            id=db.next_delivery, job_id=job_id, kind=new.kind, event=new.event, due=now, created=now
        )
        db.deliveries[delivery.id] = delivery
        db.next_delivery += 1
