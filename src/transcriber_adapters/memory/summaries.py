"""``MemorySummaryStore``: each recording's summary in a dict, leased like a part (ADR 83)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta

import attrs

from transcriber_adapters.memory.database import MemoryDatabase, database_for
from transcriber_adapters.memory.outbox import write_deliveries
from transcriber_core.entities import NewDelivery, State
from transcriber_core.errors import JobNotFound, LeaseLost
from transcriber_core.ports import Clock
from transcriber_core.summaries import Summary, SummaryState


class MemorySummaryStore:
    """The summary store in memory; the database's lock makes each method one step."""

    def __init__(
        self, clock: Clock | None = None, *, database: MemoryDatabase | None = None
    ) -> None:
        self._db = database_for(clock, database)
        #: The store methods called, in order, for tests that look.
        self.calls: list[str] = []

    @property
    def database(self) -> MemoryDatabase:
        """The data this store works on; give it to another store to share it."""
        return self._db

    def reset(self) -> None:
        """Forget every summary and call."""
        with self._db.lock:
            self._db.summaries.clear()
            self.calls.clear()

    async def request_summary(self, job_id: str) -> Summary:
        """Ask for the job's summary from scratch; ``JobNotFound`` when the job is gone."""
        with self._db.lock:
            self.calls.append("request_summary")
            if job_id not in self._db.jobs:
                raise JobNotFound()
            summary = Summary(job_id=job_id, requested=self._db.clock.now())
            self._db.summaries[job_id] = summary
            return summary

    async def get_summary(self, job_id: str) -> Summary | None:
        """The job's summary, or None."""
        with self._db.lock:
            return self._db.summaries.get(job_id)

    async def count_pending_summaries(self) -> int:
        """Summaries asked for and neither built nor given up on."""
        with self._db.lock:
            return sum(
                summary.state is SummaryState.PENDING for summary in self._db.summaries.values()
            )

    async def acquire_summary(self, *, acquisition_id: str, lease: timedelta) -> Summary | None:
        """Lease the next pending summary of a done job, oldest asked first."""
        with self._db.lock:
            self.calls.append("acquire_summary")
            now = self._db.clock.now()
            eligible = [
                summary
                for summary in self._db.summaries.values()
                if summary.state is SummaryState.PENDING
                and (job := self._db.jobs.get(summary.job_id)) is not None
                and job.state is State.DONE
                and (summary.delay_time is None or summary.delay_time <= now)
                and (
                    summary.acquisition_id is None
                    or summary.acquire_time is None
                    or summary.acquire_time <= now - lease
                )
            ]
            if not eligible:
                return None
            chosen = min(eligible, key=lambda s: (s.requested, s.job_id))
            taken = attrs.evolve(
                chosen,
                acquisition_id=acquisition_id,
                acquire_time=now,
                attempts=chosen.attempts + 1,
            )
            self._db.summaries[chosen.job_id] = taken
            return taken

    async def renew_summary(self, job_id: str, *, acquisition_id: str) -> None:
        """Move the summary's lease to now; ``LeaseLost`` if not held."""
        with self._db.lock:
            self.calls.append("renew_summary")
            summary = self._db.summaries.get(job_id)
            if summary is None or summary.acquisition_id != acquisition_id:
                raise LeaseLost()
            self._db.summaries[job_id] = attrs.evolve(summary, acquire_time=self._db.clock.now())

    async def save_summary_if_held(
        self,
        summary: Summary,
        *,
        acquisition_id: str,
        delay: timedelta | None = None,
        deliveries: Sequence[NewDelivery] = (),
    ) -> None:
        """Write the held summary's work and lease fields and ``deliveries``; else ``LeaseLost``."""
        with self._db.lock:
            self.calls.append("save_summary_if_held")
            stored = self._db.summaries.get(summary.job_id)
            if stored is None or stored.acquisition_id != acquisition_id:
                raise LeaseLost()
            now = self._db.clock.now()
            kept = summary.acquisition_id is not None
            self._db.summaries[summary.job_id] = attrs.evolve(
                summary,
                requested=stored.requested,
                acquire_time=stored.acquire_time if kept else None,
                delay_time=now + delay if delay is not None else summary.delay_time,
            )
            write_deliveries(self._db, summary.job_id, deliveries)
