"""The contract every LoginThrottle adapter passes: the sign-in's failures per client (ADR 76).

Use it from your own tests::

    class TestMyThrottle(LoginThrottleContract):
        @pytest.fixture
        async def logins(self, tmp_path):
            store = await MyStore.open(tmp_path / "logins.db")
            yield store
            await store.close()

        @pytest.fixture
        async def another_logins(self, tmp_path):
            opened = []

            async def another():
                opened.append(await MyStore.open(tmp_path / "logins.db"))
                return opened[-1]

            yield another
            for store in opened:
                await store.close()

``logins`` must yield a fresh, empty store; ``another_logins`` an async
function opening one more independent store on the same database (its own
connection, as another process would), which the race tests use. Under
pytest-asyncio's strict mode, decorate them with ``pytest_asyncio.fixture``.
Every time the suite passes is timezone-aware and fixed; nothing reads the
clock (the throttle keeps its callers' ``now``: API processes only).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta

from transcriber_core.entities import LoginFailures
from transcriber_core.ports import LoginThrottle

#: When the suite's records are made.
T0 = datetime(2026, 3, 1, 12, 0, 0, 123457, tzinfo=UTC)
#: Opens one more independent store on the database of the suite's ``logins``.
OpenAnother = Callable[[], Awaitable[LoginThrottle]]
MINUTE = timedelta(minutes=1)
HOUR = timedelta(hours=1)


class LoginThrottleContract:
    """Subclass and provide an async fixture ``logins`` yielding a fresh, empty throttle."""

    # -- login failures -----------------------------------------------------------

    async def test_no_failures_at_first(self, logins: LoginThrottle) -> None:
        """A client never seen has no failures."""
        assert await logins.get_login_failures("192.0.2.1") is None

    async def test_failures_are_stored_and_counted_up(self, logins: LoginThrottle) -> None:
        """The first failure is stored from nothing, the next over what was read."""
        first = LoginFailures(client="192.0.2.1", count=1, last=T0)
        assert await logins.save_login_failures(first, previous=None) is True
        assert await logins.get_login_failures("192.0.2.1") == first
        second = LoginFailures(client="192.0.2.1", count=2, last=T0 + MINUTE)
        assert await logins.save_login_failures(second, previous=first) is True
        assert await logins.get_login_failures("192.0.2.1") == second

    async def test_a_stale_read_stores_nothing(self, logins: LoginThrottle) -> None:
        """An attempt that read before another counted loses: its write changes nothing."""
        first = LoginFailures(client="c", count=1, last=T0)
        assert await logins.save_login_failures(first, previous=None) is True
        assert await logins.save_login_failures(first, previous=None) is False
        second = LoginFailures(client="c", count=2, last=T0 + MINUTE)
        await logins.save_login_failures(second, previous=first)
        stale = LoginFailures(client="c", count=2, last=T0 + 2 * MINUTE)
        assert await logins.save_login_failures(stale, previous=first) is False
        assert await logins.get_login_failures("c") == second

    async def test_parallel_attempts_have_one_winner(
        self, logins: LoginThrottle, another_logins: OpenAnother
    ) -> None:
        """Of guesses through four stores that read the same failures, exactly one is counted."""
        stores = [logins, *[await another_logins() for _ in range(3)]]
        seen = LoginFailures(client="c", count=3, last=T0)
        await logins.save_login_failures(seen, previous=None)
        tries = [LoginFailures(client="c", count=4, last=T0 + n * MINUTE) for n in range(1, 9)]
        results = await asyncio.gather(
            *(
                stores[n % 4].save_login_failures(each, previous=seen)
                for n, each in enumerate(tries)
            )
        )
        assert results.count(True) == 1
        assert await stores[-1].get_login_failures("c") == tries[results.index(True)]

    async def test_first_failures_from_several_stores_count_once(
        self, logins: LoginThrottle, another_logins: OpenAnother
    ) -> None:
        """A client's first failure stored through four stores at once is stored by exactly one."""
        stores = [logins, *[await another_logins() for _ in range(3)]]
        first = LoginFailures(client="c", count=1, last=T0)
        results = await asyncio.gather(
            *(store.save_login_failures(first, previous=None) for store in stores)
        )
        assert results.count(True) == 1

    async def test_clear_forgets_one_client(self, logins: LoginThrottle) -> None:
        """A client that got in starts afresh; other clients keep their count."""
        for client in ("a", "b"):
            await logins.save_login_failures(
                LoginFailures(client=client, count=2, last=T0), previous=None
            )
        await logins.clear_login_failures("a")
        await logins.clear_login_failures("a")
        assert await logins.get_login_failures("a") is None
        assert await logins.get_login_failures("b") is not None

    async def test_forget_removes_failures_older_than_the_cutoff(
        self, logins: LoginThrottle
    ) -> None:
        """Old failures are swept so the table stays bounded; recent ones stay."""
        old = LoginFailures(client="old", count=5, last=T0)
        recent = LoginFailures(client="recent", count=1, last=T0 + HOUR)
        await logins.save_login_failures(old, previous=None)
        await logins.save_login_failures(recent, previous=None)
        assert await logins.forget_login_failures(before=T0 + HOUR) == 1
        assert await logins.get_login_failures("old") is None
        assert await logins.get_login_failures("recent") == recent
