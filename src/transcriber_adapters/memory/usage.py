"""``MemoryUsageStore``: seconds sent per payer per day in a dict (ADR 59)."""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from transcriber_adapters.memory.database import MemoryDatabase, database_for
from transcriber_core.policy import QuotaDecision, charge_decision
from transcriber_core.ports import Clock
from transcriber_core.usage import Charge, Usage, month_start, utc_day


class MemoryUsageStore:
    """The usage store in memory; ``charges`` records each charge and whether it was allowed.

    The database's lock makes each charge's check and count one step, from
    tasks and threads alike; the day is the database's clock's.
    """

    def __init__(
        self, clock: Clock | None = None, *, database: MemoryDatabase | None = None
    ) -> None:
        self._db = database_for(clock, database)
        #: Every charge asked for, oldest first: (job id, allowed).
        self.charges: list[tuple[str, bool]] = []

    @property
    def database(self) -> MemoryDatabase:
        """The data this store works on; give it to another store to share it."""
        return self._db

    def reset(self) -> None:
        """Forget every charge and the record of them."""
        with self._db.lock:
            self._db.usage.clear()
            self.charges.clear()

    async def charge(self, charge: Charge, *, limit: int) -> QuotaDecision:
        """Count ``charge`` today unless the quota refuses it; a job counts once."""
        with self._db.lock:
            now = self._db.clock.now()
            today = utc_day(now)
            used = sum(
                each.seconds
                for each, day in self._db.usage.values()
                if each.payer == charge.payer and day == today
            )
            charged_before = charge.job_id in self._db.usage
            decision = charge_decision(
                now=now,
                used=used,
                incoming=charge.seconds,
                limit=limit,
                charged_before=charged_before,
            )
            if decision.allowed and not charged_before:
                self._db.usage[charge.job_id] = (charge, today)
            self.charges.append((charge.job_id, decision.allowed))
            return decision

    async def settle(self, job_id: str, seconds: float) -> None:
        """Set the job's charge to ``seconds``; nothing when it was never charged."""
        with self._db.lock:
            found = self._db.usage.get(job_id)
            if found is not None:
                charge, day = found
                self._db.usage[job_id] = (attrs.evolve(charge, seconds=seconds), day)

    async def uncharge(self, job_id: str) -> None:
        """Take the job's charge back."""
        with self._db.lock:
            self._db.usage.pop(job_id, None)

    async def usage(self, payers: Sequence[str]) -> dict[str, Usage]:
        """Each payer's seconds today and this month so far."""
        with self._db.lock:
            today = utc_day(self._db.clock.now())
            first = month_start(today)
            found = {payer: Usage(day=today) for payer in payers}
            for charge, day in self._db.usage.values():
                known = found.get(charge.payer)
                if known is None or not first <= day <= today:
                    continue
                found[charge.payer] = attrs.evolve(
                    known,
                    today=known.today + (charge.seconds if day == today else 0.0),
                    month=known.month + charge.seconds,
                )
            return found
