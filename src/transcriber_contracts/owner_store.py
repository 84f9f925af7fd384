"""The contract every OwnerStore adapter passes: one owner, its sessions, its login failures.

Use it from your own tests::

    class TestMyOwnerStore(OwnerStoreContract):
        @pytest.fixture
        async def owners(self, tmp_path):
            store = await MyStore.open(tmp_path / "owner.db")
            yield store
            await store.close()

        @pytest.fixture
        async def another_owners(self, tmp_path):
            opened = []

            async def another():
                opened.append(await MyStore.open(tmp_path / "owner.db"))
                return opened[-1]

            yield another
            for store in opened:
                await store.close()

``owners`` must yield a fresh, empty store; ``another_owners`` an async
function opening one more independent store on the same database (its own
connection, as another process would), which the race tests use. Under
pytest-asyncio's strict mode, decorate them with ``pytest_asyncio.fixture``.
Every time the suite passes is timezone-aware and fixed; nothing reads the
clock (the owner store keeps its callers' ``now``: API processes only).
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta

import attrs
import pytest

from transcriber_core.entities import LoginFailures, OwnerSession
from transcriber_core.errors import Conflict
from transcriber_core.ports import OwnerStore

#: When the suite's records are made.
T0 = datetime(2026, 3, 1, 12, 0, 0, 123457, tzinfo=UTC)
#: A hash in argon2's encoded form: ``$``, ``=``, ``+`` and ``/`` must survive.
HASH = "$argon2id$v=19$m=65536,t=3,p=4$c29tZXNhbHQ$RdescudvJCsgt3ub+b+dWRWJTmaaJObG"
#: Another owner's hash, for the one that must lose.
OTHER_HASH = (
    "$argon2id$v=19$m=65536,t=3,p=4$b3RoZXJzYWx0$iWh06vD8Fy27wf9npn6FXWiCX4K6pW6Ue1Bnzz07Z8A"
)
#: Opens one more independent store on the database of the suite's ``owners``.
OpenAnother = Callable[[], Awaitable[OwnerStore]]
MINUTE = timedelta(minutes=1)
HOUR = timedelta(hours=1)


class OwnerStoreContract:
    """Subclass and provide an async fixture ``owners`` yielding a fresh, empty ``OwnerStore``."""

    # -- the owner -------------------------------------------------------------

    async def test_no_owner_at_first(self, owners: OwnerStore) -> None:
        """A fresh store has no owner, so the service offers the setup link."""
        assert await owners.get_owner_hash() is None

    async def test_created_owner_hash_reads_back(self, owners: OwnerStore) -> None:
        """The first owner is stored and its hash comes back exactly, or login would never pass."""
        assert await owners.create_owner(HASH, now=T0) is True
        assert await owners.get_owner_hash() == HASH

    async def test_second_owner_is_refused(self, owners: OwnerStore) -> None:
        """Once an owner exists a second setup stores nothing: no takeover through a stale link."""
        await owners.create_owner(HASH, now=T0)
        assert await owners.create_owner(OTHER_HASH, now=T0 + timedelta(seconds=1)) is False
        assert await owners.get_owner_hash() == HASH

    async def test_concurrent_setups_have_one_winner(
        self, owners: OwnerStore, another_owners: OpenAnother
    ) -> None:
        """Of setups racing through four stores on one database, exactly one wins."""
        stores = [owners, *[await another_owners() for _ in range(3)]]
        hashes = [f"{HASH}-{n}" for n in range(8)]
        results = await asyncio.gather(
            *(stores[n % 4].create_owner(h, now=T0) for n, h in enumerate(hashes))
        )
        assert results.count(True) == 1
        assert await stores[-1].get_owner_hash() == hashes[results.index(True)]

    async def test_a_logout_is_seen_through_another_store(
        self, owners: OwnerStore, another_owners: OpenAnother
    ) -> None:
        """A session ended through one store (process) is gone for every other one at once."""
        other = await another_owners()
        await owners.create_session(session(1))
        assert await other.get_session(session(1).id_hash) == session(1)
        await owners.delete_session(session(1).id_hash)
        assert await other.get_session(session(1).id_hash) is None

    # -- the password -----------------------------------------------------------

    async def test_change_password_replaces_the_hash(self, owners: OwnerStore) -> None:
        """A changed password is the one read back, so the old one no longer logs in."""
        await owners.create_owner(HASH, now=T0)
        assert await owners.change_password(OTHER_HASH, now=T0 + MINUTE) is True
        assert await owners.get_owner_hash() == OTHER_HASH

    async def test_change_password_without_owner_creates_none(self, owners: OwnerStore) -> None:
        """Changing the password of nobody does nothing: it is no back door to setup."""
        assert await owners.change_password(HASH, now=T0) is False
        assert await owners.get_owner_hash() is None

    async def test_change_password_ends_every_session(self, owners: OwnerStore) -> None:
        """Every session, expired or not, is gone after a password change."""
        await owners.create_owner(HASH, now=T0)
        sessions = [session(n) for n in range(3)]
        for each in sessions:
            await owners.create_session(each)
        await owners.change_password(OTHER_HASH, now=T0 + MINUTE)
        for each in sessions:
            assert await owners.get_session(each.id_hash) is None

    # -- sessions ---------------------------------------------------------------

    async def test_created_session_reads_back(self, owners: OwnerStore) -> None:
        """A stored session comes back field for field, times to the microsecond."""
        stored = session(1, flash="Saved.")
        await owners.create_session(stored)
        assert await owners.get_session(stored.id_hash) == stored

    async def test_unknown_session_is_none(self, owners: OwnerStore) -> None:
        """A hash nobody stored opens nothing."""
        await owners.create_session(session(1))
        assert await owners.get_session(session(2).id_hash) is None

    async def test_reused_session_hash_is_a_conflict(self, owners: OwnerStore) -> None:
        """Two sessions never share a key; the second is refused with the core's Conflict."""
        await owners.create_session(session(1))
        with pytest.raises(Conflict):
            await owners.create_session(attrs.evolve(session(1), csrf="other"))
        assert (await owners.get_session(session(1).id_hash)) == session(1)

    async def test_save_writes_what_a_page_view_changes(self, owners: OwnerStore) -> None:
        """Saving keeps the key, CSRF token and login time, and writes last seen, expiry, flash."""
        stored = session(1)
        await owners.create_session(stored)
        later = attrs.evolve(
            stored,
            last_seen=T0 + MINUTE,
            expires=T0 + 2 * HOUR,
            flash="State changed.",
            csrf="not-stored",
            created=T0 + HOUR,
        )
        assert await owners.save_session(later) is True
        assert await owners.get_session(stored.id_hash) == attrs.evolve(
            stored, last_seen=T0 + MINUTE, expires=T0 + 2 * HOUR, flash="State changed."
        )
        assert await owners.save_session(attrs.evolve(later, flash=None)) is True
        read = await owners.get_session(stored.id_hash)
        assert read is not None
        assert read.flash is None

    async def test_save_never_brings_back_a_deleted_session(self, owners: OwnerStore) -> None:
        """A page view finishing after the logout does not undo it."""
        stored = session(1)
        await owners.create_session(stored)
        await owners.delete_session(stored.id_hash)
        assert await owners.save_session(attrs.evolve(stored, last_seen=T0 + MINUTE)) is False
        assert await owners.get_session(stored.id_hash) is None

    async def test_delete_ends_only_that_session(self, owners: OwnerStore) -> None:
        """Logging out in one browser leaves the other logged in; deleting twice is harmless."""
        await owners.create_session(session(1))
        await owners.create_session(session(2))
        await owners.delete_session(session(1).id_hash)
        await owners.delete_session(session(1).id_hash)
        assert await owners.get_session(session(1).id_hash) is None
        assert await owners.get_session(session(2).id_hash) == session(2)

    async def test_sweep_removes_sessions_over_at_now(self, owners: OwnerStore) -> None:
        """Sessions whose expiry is not after ``now`` are swept; the rest stay."""
        over = attrs.evolve(session(1), expires=T0 + HOUR)
        live = attrs.evolve(session(2), expires=T0 + HOUR + timedelta(microseconds=1))
        await owners.create_session(over)
        await owners.create_session(live)
        assert await owners.delete_expired_sessions(now=T0 + HOUR) == 1
        assert await owners.get_session(over.id_hash) is None
        assert await owners.get_session(live.id_hash) == live
        assert await owners.delete_expired_sessions(now=T0 + HOUR) == 0

    # -- login failures -----------------------------------------------------------

    async def test_no_failures_at_first(self, owners: OwnerStore) -> None:
        """A client never seen has no failures."""
        assert await owners.get_login_failures("192.0.2.1") is None

    async def test_failures_are_stored_and_counted_up(self, owners: OwnerStore) -> None:
        """The first failure is stored from nothing, the next over what was read."""
        first = LoginFailures(client="192.0.2.1", count=1, last=T0)
        assert await owners.save_login_failures(first, previous=None) is True
        assert await owners.get_login_failures("192.0.2.1") == first
        second = LoginFailures(client="192.0.2.1", count=2, last=T0 + MINUTE)
        assert await owners.save_login_failures(second, previous=first) is True
        assert await owners.get_login_failures("192.0.2.1") == second

    async def test_a_stale_read_stores_nothing(self, owners: OwnerStore) -> None:
        """An attempt that read before another counted loses: its write changes nothing."""
        first = LoginFailures(client="c", count=1, last=T0)
        assert await owners.save_login_failures(first, previous=None) is True
        assert await owners.save_login_failures(first, previous=None) is False
        second = LoginFailures(client="c", count=2, last=T0 + MINUTE)
        await owners.save_login_failures(second, previous=first)
        stale = LoginFailures(client="c", count=2, last=T0 + 2 * MINUTE)
        assert await owners.save_login_failures(stale, previous=first) is False
        assert await owners.get_login_failures("c") == second

    async def test_parallel_attempts_have_one_winner(
        self, owners: OwnerStore, another_owners: OpenAnother
    ) -> None:
        """Of guesses through four stores that read the same failures, exactly one is counted."""
        stores = [owners, *[await another_owners() for _ in range(3)]]
        seen = LoginFailures(client="c", count=3, last=T0)
        await owners.save_login_failures(seen, previous=None)
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
        self, owners: OwnerStore, another_owners: OpenAnother
    ) -> None:
        """A client's first failure stored through four stores at once is stored by exactly one."""
        stores = [owners, *[await another_owners() for _ in range(3)]]
        first = LoginFailures(client="c", count=1, last=T0)
        results = await asyncio.gather(
            *(store.save_login_failures(first, previous=None) for store in stores)
        )
        assert results.count(True) == 1

    async def test_clear_forgets_one_client(self, owners: OwnerStore) -> None:
        """A client that got in starts afresh; other clients keep their count."""
        for client in ("a", "b"):
            await owners.save_login_failures(
                LoginFailures(client=client, count=2, last=T0), previous=None
            )
        await owners.clear_login_failures("a")
        await owners.clear_login_failures("a")
        assert await owners.get_login_failures("a") is None
        assert await owners.get_login_failures("b") is not None

    async def test_forget_removes_failures_older_than_the_cutoff(self, owners: OwnerStore) -> None:
        """Old failures are swept so the table stays bounded; recent ones stay."""
        old = LoginFailures(client="old", count=5, last=T0)
        recent = LoginFailures(client="recent", count=1, last=T0 + HOUR)
        await owners.save_login_failures(old, previous=None)
        await owners.save_login_failures(recent, previous=None)
        assert await owners.forget_login_failures(before=T0 + HOUR) == 1
        assert await owners.get_login_failures("old") is None
        assert await owners.get_login_failures("recent") == recent

    async def test_sessions_and_failures_make_no_owner(self, owners: OwnerStore) -> None:
        """Sessions and failures (as every visit makes) leave the store without an owner."""
        await owners.create_session(session(1))
        await owners.save_login_failures(LoginFailures(client="c", count=1, last=T0), previous=None)
        assert await owners.get_owner_hash() is None


def session(n: int, *, flash: str | None = None) -> OwnerSession:
    """The ``n``-th test session: logged in at T0, expiring an hour later."""
    return OwnerSession(
        id_hash=hashlib.sha256(f"session-{n}".encode()).hexdigest(),
        csrf=f"csrf-{n}-$=+/",
        created=T0,
        last_seen=T0,
        expires=T0 + HOUR,
        flash=flash,
    )
