"""The contract every BudgetStore adapter passes: tokens taken, waits told, turns kept.

Use it from your own tests::

    class TestMyBudgetStore(BudgetStoreContract):
        @pytest.fixture
        async def budgets(self, clock, tmp_path):
            store = await MyStore.open(tmp_path / "budgets.db", clock=clock)
            yield store
            await store.close()

        @pytest.fixture
        async def another_budgets(self, clock, tmp_path):
            opened = []

            async def another():
                opened.append(await MyStore.open(tmp_path / "budgets.db", clock=clock))
                return opened[-1]

            yield another
            for store in opened:
                await store.close()

``budgets`` must yield a fresh, empty store on the suite's ``clock`` (a
``ManualClock`` the suite moves; the store reads "now" from it, ADR 30);
``another_budgets`` an async function opening one more independent store on
the same database and clock, as another process would. Nothing reads the
system clock.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from transcriber_core.budgets import burst_of
from transcriber_core.clocks import ManualClock
from transcriber_core.ports import BudgetStore

#: When the suite's first token is taken.
T0 = datetime(2026, 3, 1, 12, 0, 0, 123457, tzinfo=UTC)
HOUR = timedelta(hours=1)


#: Opens one more independent store on the database of the suite's ``budgets``.
OpenAnother = Callable[[], Awaitable[BudgetStore]]


async def take(
    clock: ManualClock,
    budgets: BudgetStore,
    name: str,
    *,
    capacity: int,
    per: timedelta,
    now: datetime,
) -> timedelta | None:
    """Take a token with the store's clock at ``now``."""
    clock.set(now)
    return await budgets.take(name, capacity=capacity, per=per)


#: SpeechKit's start budget: a burst of 50, then one token in eight seconds.
STARTS: dict[str, Any] = {"capacity": 500, "per": HOUR}
#: One token back of ``STARTS``.
REFILL = timedelta(seconds=8)


async def ask(
    clock: ManualClock, budgets: BudgetStore, holder: str | None, *, now: datetime
) -> timedelta | None:
    """A start of ``holder`` (None: unnamed) asks the ``STARTS`` budget at ``now``."""
    clock.set(now)
    return await budgets.take("starts", capacity=500, per=HOUR, holder=holder)


async def levels(clock: ManualClock, budgets: BudgetStore, *, now: datetime) -> dict[str, float]:
    """The levels with the store's clock at ``now``."""
    clock.set(now)
    return await budgets.levels()


async def _taken(
    clock: ManualClock,
    budgets: BudgetStore,
    name: str,
    count: int,
    now: datetime,
    **shape: int | timedelta,
) -> int:
    clock.set(now)
    taken = 0
    for _ in range(count):
        if await budgets.take(name, **shape) is None:  # type: ignore[arg-type]
            taken += 1
    return taken


class BudgetStoreContract:
    """Subclass and provide the fixtures ``budgets`` and ``another_budgets`` (module docstring)."""

    @pytest.fixture
    def clock(self) -> ManualClock:
        """The store's clock; the adapter's fixtures build their stores on it."""
        return ManualClock(T0)

    async def test_a_fresh_budget_gives_its_burst_then_a_wait(
        self, clock: ManualClock, budgets: BudgetStore
    ) -> None:
        """A new budget hands out its burst at once; the next take is told to wait, not given."""
        taken = await _taken(clock, budgets, "starts", 60, T0, capacity=500, per=HOUR)
        assert taken == burst_of(500)
        wait = await take(clock, budgets, "starts", capacity=500, per=HOUR, now=T0)
        assert wait is not None
        # 450 tokens an hour come back: one in eight seconds.
        assert wait == timedelta(seconds=8)

    async def test_a_token_comes_back_when_the_wait_says(
        self, clock: ManualClock, budgets: BudgetStore
    ) -> None:
        """Taking again exactly when the wait ends succeeds; a millisecond sooner does not."""
        await _taken(clock, budgets, "sync", 2, T0, capacity=20, per=timedelta(seconds=1))
        wait = await take(clock, budgets, "sync", capacity=20, per=timedelta(seconds=1), now=T0)
        assert wait is not None
        early = T0 + wait - timedelta(milliseconds=1)
        assert await take(clock, budgets, "sync", capacity=20, per=timedelta(seconds=1), now=early)
        assert (
            await take(clock, budgets, "sync", capacity=20, per=timedelta(seconds=1), now=T0 + wait)
            is None
        )

    async def test_no_window_sees_more_than_the_capacity(
        self, clock: ManualClock, budgets: BudgetStore
    ) -> None:
        """Taking greedily every 10 ms for 3 periods, no window of one period holds > capacity."""
        per = timedelta(seconds=1)
        times: list[datetime] = []
        now = T0
        while now < T0 + 3 * per:
            if await take(clock, budgets, "b", capacity=20, per=per, now=now) is None:
                times.append(now)
            now += timedelta(milliseconds=10)
        assert len(times) >= 50
        for i, start in enumerate(times):
            inside = [t for t in times[i:] if t < start + per]
            assert len(inside) <= 20

    async def test_budgets_are_apart(self, clock: ManualClock, budgets: BudgetStore) -> None:
        """Spending one budget leaves another whole."""
        await _taken(clock, budgets, "checks", 300, T0, capacity=2500, per=HOUR)
        assert await take(clock, budgets, "checks", capacity=2500, per=HOUR, now=T0) is not None
        assert await take(clock, budgets, "starts", capacity=500, per=HOUR, now=T0) is None

    async def test_a_clock_behind_refills_nothing(
        self, clock: ManualClock, budgets: BudgetStore
    ) -> None:
        """A store clock behind the stored time (another process's) gives no extra token."""
        await _taken(clock, budgets, "b", 2, T0, capacity=20, per=timedelta(seconds=1))
        earlier = T0 - timedelta(minutes=5)
        assert await take(clock, budgets, "b", capacity=20, per=timedelta(seconds=1), now=earlier)

    async def test_levels_show_tokens_left(self, clock: ManualClock, budgets: BudgetStore) -> None:
        """``levels`` names each budget used with the tokens it holds now, refilled."""
        assert await levels(clock, budgets, now=T0) == {}
        await _taken(clock, budgets, "starts", 10, T0, capacity=500, per=HOUR)
        held = await levels(clock, budgets, now=T0 + timedelta(seconds=16))
        assert held == {"starts": pytest.approx(40 + 2)}

    async def test_a_bad_shape_is_refused(self, clock: ManualClock, budgets: BudgetStore) -> None:
        """A capacity below 1 or a period not positive is a ``ValueError``, not an endless wait."""
        with pytest.raises(ValueError, match="capacity"):
            await take(clock, budgets, "b", capacity=0, per=HOUR, now=T0)
        with pytest.raises(ValueError, match="period"):
            await take(clock, budgets, "b", capacity=5, per=timedelta(0), now=T0)

    async def test_stores_on_one_database_racing_share_one_budget(
        self, clock: ManualClock, budgets: BudgetStore, another_budgets: OpenAnother
    ) -> None:
        """Three stores on one database taking at once get the burst between them, never more."""
        racers = [budgets, await another_budgets(), await another_budgets()]
        results = await asyncio.gather(
            *(store.take("sync", capacity=20, per=HOUR) for _ in range(10) for store in racers)
        )
        assert sum(result is None for result in results) == burst_of(20)

    async def test_a_holder_told_to_wait_is_admitted_at_its_turn(
        self, clock: ManualClock, budgets: BudgetStore
    ) -> None:
        """A named start on a spent budget is admitted at the refill, on the token promised it."""
        await _taken(clock, budgets, "starts", 50, T0, **STARTS)
        assert await ask(clock, budgets, "part-a", now=T0) == REFILL
        # Asked again early: the rest of the wait, and nothing more promised.
        assert await ask(clock, budgets, "part-a", now=T0 + REFILL / 2) == REFILL / 2
        # The token coming back is part-a's: an unnamed take or another holder waits behind it.
        assert await ask(clock, budgets, None, now=T0 + REFILL) == REFILL
        assert await ask(clock, budgets, "part-b", now=T0 + REFILL) == REFILL
        assert await ask(clock, budgets, "part-a", now=T0 + REFILL) is None
        # Admitted once: its next start is a new one, behind part-b.
        assert await ask(clock, budgets, "part-a", now=T0 + REFILL) == REFILL * 2

    async def test_waiting_holders_get_turns_one_refill_apart_and_ask_twice_each(
        self, clock: ManualClock, budgets: BudgetStore
    ) -> None:
        """N starts on a spent budget: turns a refill apart; each asks once, then is admitted."""
        await _taken(clock, budgets, "starts", 50, T0, **STARTS)
        count = 12
        dues = {}
        for n in range(count):
            wait = await ask(clock, budgets, f"part-{n}", now=T0)
            assert wait is not None
            dues[f"part-{n}"] = T0 + wait
        assert sorted(dues.values()) == [T0 + REFILL * (n + 1) for n in range(count)]
        asks = count
        for holder, due in sorted(dues.items(), key=lambda item: item[1]):
            assert await ask(clock, budgets, holder, now=due) is None
            asks += 1
        assert asks == 2 * count
        # No token was taken twice: the budget is exactly as spent as twelve refills allow.
        assert await ask(clock, budgets, None, now=T0 + REFILL * count) == REFILL

    async def test_holders_on_one_database_racing_get_turns_apart(
        self, clock: ManualClock, budgets: BudgetStore, another_budgets: OpenAnother
    ) -> None:
        """Three stores' holders asking a spent budget at once each get a turn of their own."""
        await _taken(clock, budgets, "starts", 50, T0, **STARTS)
        racers = [budgets, await another_budgets(), await another_budgets()]
        waits = await asyncio.gather(
            *(
                store.take("starts", **STARTS, holder=f"{n}-{m}")
                for n, store in enumerate(racers)
                for m in range(4)
            )
        )
        assert sorted(wait for wait in waits if wait is not None) == [
            REFILL * (n + 1) for n in range(12)
        ]

    async def test_a_turn_never_claimed_is_forgotten_after_a_period(
        self, clock: ManualClock, budgets: BudgetStore
    ) -> None:
        """A holder that never came back holds no turn an hour on: the budget is whole again."""
        await _taken(clock, budgets, "starts", 50, T0, **STARTS)
        wait = await ask(clock, budgets, "gone", now=T0)
        assert wait == REFILL
        later = T0 + REFILL + HOUR + timedelta(seconds=1)
        assert await _taken(clock, budgets, "starts", 60, later, **STARTS) == burst_of(500)
        # The forgotten holder, back at last, asks as a new start: behind the others.
        assert await ask(clock, budgets, "gone", now=later) == REFILL
