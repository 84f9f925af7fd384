"""The contract every OwnerStore adapter passes: one owner at most, secrets made once.

Use it from your own tests::

    class TestMyOwnerStore(OwnerStoreContract):
        @pytest.fixture
        async def owners(self, tmp_path):
            store = await MyStore.open(tmp_path / "owner.db")
            yield store
            await store.close()

The fixture must yield a fresh, empty store (under pytest-asyncio's strict
mode, decorate it with ``pytest_asyncio.fixture``). Every time the suite
passes is timezone-aware and fixed; nothing reads the clock.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

from transcriber_core.ports import OwnerStore

#: When the suite's records are made.
T0 = datetime(2026, 3, 1, 12, 0, 0, 123457, tzinfo=UTC)
#: A hash in argon2's encoded form: ``$``, ``=``, ``+`` and ``/`` must survive.
HASH = "$argon2id$v=19$m=65536,t=3,p=4$c29tZXNhbHQ$RdescudvJCsgt3ub+b+dWRWJTmaaJObG"
#: Another owner's hash, for the one that must lose.
OTHER_HASH = (
    "$argon2id$v=19$m=65536,t=3,p=4$b3RoZXJzYWx0$iWh06vD8Fy27wf9npn6FXWiCX4K6pW6Ue1Bnzz07Z8A"
)
#: Every byte value once: a secret is binary, not text.
EVERY_BYTE = bytes(range(256))


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

    async def test_concurrent_setups_have_one_winner(self, owners: OwnerStore) -> None:
        """Of many setups racing, exactly one wins and its hash is the one stored.

        Weaker than it looks: the calls share one store object, so SQLite runs
        them one after another on its one connection thread and the memory
        adapter never awaits inside ``create_owner``; a check-then-insert would
        pass here. The cross-connection race is an adapter's own test (SQLite:
        ``test_sqlite_setups_on_two_connections_have_one_winner``); a hook for
        a second instance comes with the PostgreSQL work.
        """
        hashes = [f"{HASH}-{n}" for n in range(8)]
        results = await asyncio.gather(*(owners.create_owner(h, now=T0) for h in hashes))
        assert results.count(True) == 1
        assert await owners.get_owner_hash() == hashes[results.index(True)]

    # -- secrets ---------------------------------------------------------------

    async def test_first_ask_stores_the_value(self, owners: OwnerStore) -> None:
        """The first ask for a secret stores and returns the offered value, byte for byte."""
        assert await owners.get_or_create_secret("session", EVERY_BYTE, now=T0) == EVERY_BYTE

    async def test_later_asks_get_the_first_value(self, owners: OwnerStore) -> None:
        """A secret is made once: later offers are ignored, so signed cookies survive restarts."""
        first = await owners.get_or_create_secret("session", b"first-secret", now=T0)
        later = await owners.get_or_create_secret("session", b"other-secret", now=T0)
        assert (first, later) == (b"first-secret", b"first-secret")

    async def test_secrets_are_kept_by_name(self, owners: OwnerStore) -> None:
        """Each name has its own secret; one purpose's key is never another's."""
        await owners.get_or_create_secret("session", b"session-key", now=T0)
        other = await owners.get_or_create_secret("csrf", b"csrf-key", now=T0)
        assert other == b"csrf-key"
        assert await owners.get_or_create_secret("session", b"x", now=T0) == b"session-key"

    async def test_concurrent_first_asks_agree(self, owners: OwnerStore) -> None:
        """Callers racing to make a secret all get the same one, whoever offered it.

        Weaker than it looks, for the same reason as the setup race above: one
        store object, calls serialised by SQLite's connection thread or never
        suspended in memory, so a non-atomic get-or-create would pass here.
        """
        offers = [bytes([n]) * 32 for n in range(8)]
        results = await asyncio.gather(
            *(owners.get_or_create_secret("session", offer, now=T0) for offer in offers)
        )
        assert len(set(results)) == 1
        assert results[0] in offers

    async def test_secrets_do_not_make_an_owner(self, owners: OwnerStore) -> None:
        """Making a secret (as every startup does) leaves the store without an owner."""
        await owners.get_or_create_secret("session", b"key", now=T0)
        assert await owners.get_owner_hash() is None
