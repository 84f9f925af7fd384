"""The contract every UsageStore adapter passes: days, months, the quota, once per job, races.

Use it from your own tests::

    class TestMyUsageStore(UsageStoreContract):
        @pytest.fixture
        async def usage(self, clock, tmp_path):
            store = await MyStore.open(tmp_path / "usage.db", clock=clock)
            yield store
            await store.close()

        @pytest.fixture
        def open_usage(self, clock, tmp_path):
            async def another():
                return await MyStore.open(tmp_path / "usage.db", clock=clock)

            return another

``usage`` must yield a fresh, empty store on the suite's ``clock`` (a
``ManualClock`` the suite moves: the day is the store's clock's, ADR 59).
``open_usage`` is an async function opening one more independent store on
the same database and clock, as another process would, returning it with
the function that closes it; the race tests call it inside threads of their
own, each with its own event loop.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from datetime import UTC, date, datetime, timedelta

import pytest

from transcriber_contracts.racing import in_threads
from transcriber_core.clocks import ManualClock
from transcriber_core.ports import UsageStore
from transcriber_core.usage import Charge, Usage

#: The suite's "now": late on the last day of a month, so midnight and the month are near.
T0 = datetime(2026, 3, 31, 23, 0, 0, 123457, tzinfo=UTC)
#: The next UTC midnight after T0, which is also the next month's first instant.
MIDNIGHT = datetime(2026, 4, 1, tzinfo=UTC)
#: A quota of one hour a day.
LIMIT = 3600
#: Opens one more store on the suite's database: the store and how to close it.
OpenUsage = Callable[[], Awaitable[tuple[UsageStore, Callable[[], Awaitable[None]]]]]
#: Threads in each race.
RACERS = 4


def charge(job: str, seconds: float, payer: str = "person:a") -> Charge:
    """A charge of ``seconds`` for job ``job``."""
    return Charge(job_id=job, payer=payer, seconds=seconds)


class UsageStoreContract:
    """Subclass and provide the fixtures ``usage`` and ``open_usage`` (module docstring)."""

    @pytest.fixture
    def clock(self) -> ManualClock:
        """The store's clock; the adapter's fixtures build their stores on it."""
        return ManualClock(T0)

    async def test_nothing_charged_is_zero(self, usage: UsageStore) -> None:
        """A payer never charged has used nothing, on the store's today."""
        assert await usage.usage(["person:a"]) == {"person:a": Usage(day=date(2026, 3, 31))}
        assert await usage.usage([]) == {}

    async def test_a_charge_counts_today_and_this_month(self, usage: UsageStore) -> None:
        """Charged seconds show in the day's and the month's figures of their payer only."""
        assert (await usage.charge(charge("j1", 90.5), limit=0)).allowed
        assert (await usage.charge(charge("j2", 9.5), limit=0)).allowed
        assert (await usage.charge(charge("j3", 7, payer="telegram:42"), limit=0)).allowed
        found = await usage.usage(["person:a", "telegram:42", "person:b"])
        day = date(2026, 3, 31)
        assert found == {
            "person:a": Usage(day=day, today=100.0, month=100.0),
            "telegram:42": Usage(day=day, today=7.0, month=7.0),
            "person:b": Usage(day=day),
        }

    async def test_exactly_at_the_limit_is_taken(self, usage: UsageStore) -> None:
        """A recording that ends exactly at the day's limit is taken; the reset is midnight UTC."""
        await usage.charge(charge("j1", LIMIT - 600), limit=LIMIT)
        decision = await usage.charge(charge("j2", 600), limit=LIMIT)
        assert decision.allowed
        assert decision.used == LIMIT - 600
        assert decision.resets == MIDNIGHT
        assert (await usage.usage(["person:a"]))["person:a"].today == LIMIT

    async def test_one_second_over_is_refused_and_not_counted(self, usage: UsageStore) -> None:
        """A second past the limit is refused, nothing counted; a spent day refuses even 0 s."""
        await usage.charge(charge("j1", LIMIT - 600), limit=LIMIT)
        refused = await usage.charge(charge("j2", 601), limit=LIMIT)
        assert not refused.allowed
        assert refused.left == 600
        assert refused.resets == MIDNIGHT
        assert (await usage.usage(["person:a"]))["person:a"].today == LIMIT - 600
        await usage.charge(charge("j3", 600), limit=LIMIT)
        assert not (await usage.charge(charge("j4", 0), limit=LIMIT)).allowed

    async def test_another_payers_day_is_apart(self, usage: UsageStore) -> None:
        """One payer's spent day refuses nobody else."""
        await usage.charge(charge("j1", LIMIT), limit=LIMIT)
        assert (await usage.charge(charge("j2", LIMIT, payer="person:b"), limit=LIMIT)).allowed

    async def test_across_midnight_utc_the_day_starts_again(
        self, clock: ManualClock, usage: UsageStore
    ) -> None:
        """A day spent at 23:59:59.999999 UTC is whole again at midnight; the month keeps both."""
        clock.set(MIDNIGHT - timedelta(microseconds=1))
        await usage.charge(charge("j1", LIMIT), limit=LIMIT)
        refused = await usage.charge(charge("j2", 1), limit=LIMIT)
        assert not refused.allowed
        assert refused.resets == MIDNIGHT
        clock.set(MIDNIGHT)
        decision = await usage.charge(charge("j2", 1), limit=LIMIT)
        assert decision.allowed
        assert decision.used == 0
        assert decision.resets == MIDNIGHT + timedelta(days=1)
        # Midnight here is also a new month: the month's figure starts again with the day's.
        found = (await usage.usage(["person:a"]))["person:a"]
        assert found == Usage(day=date(2026, 4, 1), today=1.0, month=1.0)

    async def test_the_month_sums_its_days(self, clock: ManualClock, usage: UsageStore) -> None:
        """The month's figure holds every day of the month so far, the day's only today."""
        clock.set(datetime(2026, 3, 1, 0, 0, tzinfo=UTC))
        await usage.charge(charge("j1", 100), limit=0)
        clock.set(datetime(2026, 3, 15, 12, 0, tzinfo=UTC))
        await usage.charge(charge("j2", 20), limit=0)
        clock.set(T0)
        await usage.charge(charge("j3", 3), limit=0)
        found = (await usage.usage(["person:a"]))["person:a"]
        assert found == Usage(day=date(2026, 3, 31), today=3.0, month=123.0)

    async def test_a_job_counts_once(self, usage: UsageStore) -> None:
        """Charging a job again (a retry, a part, a replay) counts nothing and is allowed."""
        await usage.charge(charge("j1", LIMIT), limit=LIMIT)
        again = await usage.charge(charge("j1", LIMIT), limit=LIMIT)
        assert again.allowed
        assert (await usage.usage(["person:a"]))["person:a"].today == LIMIT

    async def test_settle_sets_the_measured_seconds_once(self, usage: UsageStore) -> None:
        """The measured length replaces the declared one, however often it is settled."""
        await usage.charge(charge("j1", 0), limit=LIMIT)
        for _ in range(3):
            await usage.settle("j1", 1234.5)
        await usage.settle("never-charged", 99)
        assert (await usage.usage(["person:a"]))["person:a"].today == 1234.5
        assert not (await usage.charge(charge("j2", LIMIT - 1234), limit=LIMIT)).allowed

    async def test_uncharge_gives_the_seconds_back(self, usage: UsageStore) -> None:
        """A charge taken back frees its seconds; taking back nothing is no error."""
        await usage.charge(charge("j1", LIMIT), limit=LIMIT)
        await usage.uncharge("j1")
        await usage.uncharge("j1")
        assert (await usage.usage(["person:a"]))["person:a"].today == 0
        assert (await usage.charge(charge("j2", LIMIT), limit=LIMIT)).allowed

    def test_threads_counting_at_once_lose_no_update(
        self, usage: UsageStore, open_usage: OpenUsage
    ) -> None:
        """Threads, each with a store and loop of its own, charge one payer at once: none lost."""
        per_thread = 10

        async def work(n: int) -> list[bool]:
            return [
                (await store_charge(open_usage, charge(f"t{n}-{i}", 1.5), limit=0))
                for i in range(per_thread)
            ]

        results = _race(work)
        assert all(all(each) for each in results)
        found = asyncio.run(_usage_of(open_usage, "person:a"))
        assert found.today == RACERS * per_thread * 1.5

    def test_threads_racing_for_the_last_seconds_have_exact_winners(
        self, usage: UsageStore, open_usage: OpenUsage
    ) -> None:
        """With room for two recordings left, of four threads charging at once exactly two win."""
        asyncio.run(store_charge(open_usage, charge("first", LIMIT - 200), limit=LIMIT))

        async def work(n: int) -> list[bool]:
            return [await store_charge(open_usage, charge(f"race-{n}", 100), limit=LIMIT)]

        results = _race(work)
        assert sum(result[0] for result in results) == 2
        assert asyncio.run(_usage_of(open_usage, "person:a")).today == LIMIT

    def test_threads_charging_one_job_count_it_once(
        self, usage: UsageStore, open_usage: OpenUsage
    ) -> None:
        """The same job charged by four threads at once (retries on four hosts) counts once."""

        async def work(n: int) -> list[bool]:
            return [await store_charge(open_usage, charge("one-job", 300), limit=LIMIT)]

        results = _race(work)
        assert all(result[0] for result in results)
        assert asyncio.run(_usage_of(open_usage, "person:a")).today == 300


async def store_charge(open_usage: OpenUsage, what: Charge, *, limit: int) -> bool:
    """Charge ``what`` through a store of its own; whether it was allowed."""
    store, close = await open_usage()
    try:
        return (await store.charge(what, limit=limit)).allowed
    finally:
        await close()


async def _usage_of(open_usage: OpenUsage, payer: str) -> Usage:
    store, close = await open_usage()
    try:
        return (await store.usage([payer]))[payer]
    finally:
        await close()


def _race(work: Callable[[int], Awaitable[list[bool]]]) -> list[list[bool]]:
    """Run ``work(n)`` in ``RACERS`` threads, each its own event loop, started together."""

    async def started(n: int, ready: Callable[[], object]) -> list[bool]:
        ready()
        return await work(n)

    return in_threads(RACERS, started)
