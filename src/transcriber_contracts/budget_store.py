"""The contract every BudgetStore adapter passes: tokens taken, waits told, budgets apart.

Use it from your own tests::

    class TestMyBudgetStore(BudgetStoreContract):
        @pytest.fixture
        async def budgets(self, tmp_path):
            store = await MyStore.open(tmp_path / "budgets.db")
            yield store
            await store.close()

The fixture must yield a fresh, empty store. Every time is fixed; nothing
reads the clock.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from transcriber_core.budgets import burst_of
from transcriber_core.ports import BudgetStore

#: When the suite's first token is taken.
T0 = datetime(2026, 3, 1, 12, 0, 0, 123457, tzinfo=UTC)
HOUR = timedelta(hours=1)


async def _taken(
    budgets: BudgetStore, name: str, count: int, now: datetime, **shape: object
) -> int:
    taken = 0
    for _ in range(count):
        if await budgets.take(name, now=now, **shape) is None:  # type: ignore[arg-type]
            taken += 1
    return taken


class BudgetStoreContract:
    """Subclass and provide an async fixture ``budgets`` yielding a fresh ``BudgetStore``."""

    async def test_a_fresh_budget_gives_its_burst_then_a_wait(self, budgets: BudgetStore) -> None:
        """A new budget hands out its burst at once; the next take is told to wait, not given."""
        taken = await _taken(budgets, "starts", 60, T0, capacity=500, per=HOUR)
        assert taken == burst_of(500)
        wait = await budgets.take("starts", capacity=500, per=HOUR, now=T0)
        assert wait is not None
        # 450 tokens an hour come back: one in eight seconds.
        assert wait == timedelta(seconds=8)

    async def test_a_token_comes_back_when_the_wait_says(self, budgets: BudgetStore) -> None:
        """Taking again exactly when the wait ends succeeds; a millisecond sooner does not."""
        await _taken(budgets, "sync", 2, T0, capacity=20, per=timedelta(seconds=1))
        wait = await budgets.take("sync", capacity=20, per=timedelta(seconds=1), now=T0)
        assert wait is not None
        early = T0 + wait - timedelta(milliseconds=1)
        assert await budgets.take("sync", capacity=20, per=timedelta(seconds=1), now=early)
        assert (
            await budgets.take("sync", capacity=20, per=timedelta(seconds=1), now=T0 + wait) is None
        )

    async def test_no_window_sees_more_than_the_capacity(self, budgets: BudgetStore) -> None:
        """Taking greedily every 10 ms for 3 periods, no window of one period holds > capacity."""
        per = timedelta(seconds=1)
        times: list[datetime] = []
        now = T0
        while now < T0 + 3 * per:
            if await budgets.take("b", capacity=20, per=per, now=now) is None:
                times.append(now)
            now += timedelta(milliseconds=10)
        assert len(times) >= 50
        for i, start in enumerate(times):
            inside = [t for t in times[i:] if t < start + per]
            assert len(inside) <= 20

    async def test_budgets_are_apart(self, budgets: BudgetStore) -> None:
        """Spending one budget leaves another whole."""
        await _taken(budgets, "checks", 300, T0, capacity=2500, per=HOUR)
        assert await budgets.take("checks", capacity=2500, per=HOUR, now=T0) is not None
        assert await budgets.take("starts", capacity=500, per=HOUR, now=T0) is None

    async def test_a_clock_behind_refills_nothing(self, budgets: BudgetStore) -> None:
        """A process whose clock is behind the stored time gets no extra token."""
        await _taken(budgets, "b", 2, T0, capacity=20, per=timedelta(seconds=1))
        earlier = T0 - timedelta(minutes=5)
        assert await budgets.take("b", capacity=20, per=timedelta(seconds=1), now=earlier)

    async def test_levels_show_tokens_left(self, budgets: BudgetStore) -> None:
        """``levels`` names each budget used with the tokens it holds now, refilled."""
        assert await budgets.levels(now=T0) == {}
        await _taken(budgets, "starts", 10, T0, capacity=500, per=HOUR)
        levels = await budgets.levels(now=T0 + timedelta(seconds=16))
        assert levels == {"starts": pytest.approx(40 + 2)}

    async def test_a_bad_shape_is_refused(self, budgets: BudgetStore) -> None:
        """A capacity below 1 or a period not positive is a ``ValueError``, not an endless wait."""
        with pytest.raises(ValueError, match="capacity"):
            await budgets.take("b", capacity=0, per=HOUR, now=T0)
        with pytest.raises(ValueError, match="period"):
            await budgets.take("b", capacity=5, per=timedelta(0), now=T0)
