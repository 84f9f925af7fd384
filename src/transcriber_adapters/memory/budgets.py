"""Request budgets in a dict: the budget store of one process, for demos and tests (ADR 29)."""

from __future__ import annotations

from datetime import timedelta

from transcriber_adapters.memory.database import MemoryDatabase, database_for
from transcriber_core.budgets import level, take_token, take_turn, turns_forgotten_before
from transcriber_core.ports import Clock


class MemoryBudgetStore:
    """Token buckets by name, with holders' turns; ``takes`` records every ``take`` and its answer.

    Time is the database's clock; stores on one ``database`` share its buckets.
    """

    def __init__(
        self, clock: Clock | None = None, *, database: MemoryDatabase | None = None
    ) -> None:
        self._db = database_for(clock, database)
        #: Every take, oldest first: (name, taken).
        self.takes: list[tuple[str, bool]] = []

    @property
    def database(self) -> MemoryDatabase:
        """The data this store works on; give it to another store to share it."""
        return self._db

    def reset(self) -> None:
        """Forget every budget and take."""
        with self._db.lock:
            self._db.buckets.clear()
            self._db.turns.clear()
            self.takes.clear()

    async def take(
        self, name: str, *, capacity: int, per: timedelta, holder: str | None = None
    ) -> timedelta | None:
        """Take a token of ``name`` or say how long until one is back; a holder keeps a turn."""
        with self._db.lock:
            known = self._db.buckets.get(name)
            bucket = None if known is None else known[0]
            now = self._db.clock.now()
            if holder is None:
                after, wait = take_token(bucket, capacity=capacity, per=per, now=now)
            else:
                turns = self._db.turns
                cutoff = turns_forgotten_before(now, per)
                for key in [key for key, due in turns.items() if key[0] == name and due < cutoff]:
                    del turns[key]
                turn = take_turn(
                    bucket, turns.get((name, holder)), capacity=capacity, per=per, now=now
                )
                after, wait = turn.bucket, turn.wait
                if turn.due is None:
                    turns.pop((name, holder), None)
                else:
                    turns[name, holder] = turn.due
            self._db.buckets[name] = (after, capacity, per)
            self.takes.append((name, wait is None))
            return wait

    async def levels(self) -> dict[str, float]:
        """Tokens each budget used so far holds now."""
        with self._db.lock:
            now = self._db.clock.now()
            return {
                name: level(bucket, capacity=capacity, per=per, now=now)
                for name, (bucket, capacity, per) in sorted(self._db.buckets.items())
            }
