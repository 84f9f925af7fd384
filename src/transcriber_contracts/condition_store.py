"""The contract every ConditionStore adapter passes: report, age, scope and clear conditions.

Use it from your own tests::

    class TestMyConditionStore(ConditionStoreContract):
        @pytest.fixture
        async def conditions(self, clock, tmp_path):
            store = await MyStore.open(tmp_path / "conditions.db", clock=clock)
            yield store
            await store.close()

The fixture must yield a fresh, empty store on the suite's ``clock`` (a
``ManualClock`` the suite moves; the store stamps and ages conditions by it,
ADR 30). Nothing reads the system clock.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from transcriber_core.clocks import ManualClock
from transcriber_core.entities import EVERYWHERE
from transcriber_core.ports import ConditionStore

#: When the suite's conditions are first seen.
T0 = datetime(2026, 3, 1, 12, 0, 0, 123457, tzinfo=UTC)
#: A host of the deployment, and another one.
HOST = "host-a"
OTHER_HOST = "host-b"
#: Both scopes a process on ``HOST`` looks at.
HERE = frozenset({HOST, EVERYWHERE})
#: Longer than anything the suite waits: every condition reported is within it.
DAY = timedelta(days=1)


async def report(
    clock: ManualClock, conditions: ConditionStore, code: str, *, scope: str, now: datetime = T0
) -> None:
    """Report ``code`` with the store's clock at ``now``."""
    clock.set(now)
    await conditions.report(code, scope=scope, message="m")


class ConditionStoreContract:
    """Subclass and provide an async fixture ``conditions`` on the suite's ``clock``."""

    @pytest.fixture
    def clock(self) -> ManualClock:
        """The store's clock; the adapter's fixture builds its store on it."""
        return ManualClock(T0)

    async def test_nothing_holds_at_first(
        self, clock: ManualClock, conditions: ConditionStore
    ) -> None:
        """A fresh store reports no condition, so a fresh service is healthy."""
        assert await conditions.current(scopes=HERE, within=DAY) == []

    async def test_reported_condition_reads_back(
        self, clock: ManualClock, conditions: ConditionStore
    ) -> None:
        """A reported condition comes back with its code, scope, words and times."""
        await conditions.report("disk_full", scope=HOST, message="no space")
        (held,) = await conditions.current(scopes=HERE, within=DAY)
        assert (held.code, held.scope, held.message) == ("disk_full", HOST, "no space")
        assert held.since == T0
        assert held.seen == T0

    async def test_seen_again_keeps_since(
        self, clock: ManualClock, conditions: ConditionStore
    ) -> None:
        """Seeing a condition again moves ``seen`` and keeps ``since``: how long it has held."""
        await conditions.report("disk_full", scope=HOST, message="a")
        later = clock.advance(timedelta(minutes=3))
        await conditions.report("disk_full", scope=HOST, message="b")
        (held,) = await conditions.current(scopes=HERE, within=DAY)
        assert (held.since, held.seen, held.message) == (T0, later, "b")

    async def test_old_conditions_age_out(
        self, clock: ManualClock, conditions: ConditionStore
    ) -> None:
        """A condition last seen ``within`` or longer ago (the store's clock) no longer holds."""
        await report(clock, conditions, "disk_full", scope=HOST, now=T0)
        clock.set(T0 + timedelta(minutes=5))
        assert await conditions.current(scopes=HERE, within=timedelta(minutes=5)) == []
        just_inside = timedelta(minutes=5, microseconds=1)
        assert len(await conditions.current(scopes=HERE, within=just_inside)) == 1

    async def test_other_hosts_disks_are_not_ours(
        self, clock: ManualClock, conditions: ConditionStore
    ) -> None:
        """A full disk on another host does not hold here; a deployment-wide one does."""
        await report(clock, conditions, "disk_full", scope=OTHER_HOST, now=T0)
        await report(clock, conditions, "recognizer_credentials_rejected", scope=EVERYWHERE, now=T0)
        held = await conditions.current(scopes=HERE, within=DAY)
        assert [(c.code, c.scope) for c in held] == [
            ("recognizer_credentials_rejected", EVERYWHERE)
        ]

    async def test_current_is_ordered_by_code_then_scope(
        self, clock: ManualClock, conditions: ConditionStore
    ) -> None:
        """The order is fixed, so /health names the same first cause on every call."""
        for code, scope in [("z_code", HOST), ("a_code", HOST), ("a_code", EVERYWHERE)]:
            await conditions.report(code, scope=scope, message="m")
        held = await conditions.current(scopes=HERE, within=DAY)
        assert [(c.code, c.scope) for c in held] == [
            ("a_code", EVERYWHERE),
            ("a_code", HOST),
            ("z_code", HOST),
        ]

    async def test_clear_forgets_only_the_named_codes_and_scopes(
        self, clock: ManualClock, conditions: ConditionStore
    ) -> None:
        """Clearing disk_full here leaves other codes and other hosts' disks alone."""
        await report(clock, conditions, "disk_full", scope=HOST, now=T0)
        await report(clock, conditions, "disk_full", scope=OTHER_HOST, now=T0)
        await report(clock, conditions, "storage_bucket_missing", scope=EVERYWHERE, now=T0)
        await conditions.clear(frozenset({"disk_full"}), scopes=HERE)
        everywhere = HERE | {OTHER_HOST}
        held = await conditions.current(scopes=everywhere, within=DAY)
        assert [(c.code, c.scope) for c in held] == [
            ("disk_full", OTHER_HOST),
            ("storage_bucket_missing", EVERYWHERE),
        ]

    async def test_clearing_nothing_is_harmless(
        self, clock: ManualClock, conditions: ConditionStore
    ) -> None:
        """Clearing codes that do not hold (the usual case after a step) changes nothing."""
        await conditions.clear(frozenset({"disk_full"}), scopes=HERE)
        await conditions.clear(frozenset(), scopes=HERE)
        assert await conditions.current(scopes=HERE, within=DAY) == []

    async def test_cleared_condition_starts_afresh(
        self, clock: ManualClock, conditions: ConditionStore
    ) -> None:
        """A condition seen again after it cleared has a new ``since``."""
        await report(clock, conditions, "disk_full", scope=HOST, now=T0)
        await conditions.clear(frozenset({"disk_full"}), scopes=HERE)
        later = T0 + timedelta(hours=1)
        await report(clock, conditions, "disk_full", scope=HOST, now=later)
        (held,) = await conditions.current(scopes=HERE, within=DAY)
        assert held.since == later
