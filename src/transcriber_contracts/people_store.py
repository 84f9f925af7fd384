"""The contract every PeopleStore adapter passes: invites used once, tokens, sessions, disabling.

Use it from your own tests::

    class TestMyPeopleStore(PeopleStoreContract):
        @pytest.fixture
        async def people(self, clock, tmp_path):
            store = await MyStore.open(tmp_path / "people.db", clock=clock)
            yield store
            await store.close()

        @pytest.fixture
        def open_people(self, clock, tmp_path):
            async def another():
                return await MyStore.open(tmp_path / "people.db", clock=clock)

            return another

``people`` must yield a fresh, empty store on the suite's ``clock`` (a
``ManualClock`` the suite moves; invites expire by the store's clock, ADR
30). ``open_people`` is an async function opening one more independent
store on the same database and clock, as another process would; the race
test calls it inside threads of its own, each with its own event loop, and
closes what it opened. Under pytest-asyncio's strict mode decorate async
fixtures with ``pytest_asyncio.fixture``.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import TypeVar

import attrs
import pytest

from transcriber_contracts.racing import in_threads
from transcriber_core.clocks import ManualClock
from transcriber_core.entities import SessionLogin
from transcriber_core.errors import Conflict
from transcriber_core.people import (
    INVITE_LIFETIME,
    LINK_CODE_LIFETIME,
    PERSON_ID_LENGTH,
    LinkedChat,
    Person,
    PersonSession,
    PersonToken,
    Role,
    person_owner,
)
from transcriber_core.ports import PeopleStore

#: When the suite's records are made.
T0 = datetime(2026, 3, 1, 12, 0, 0, 123457, tzinfo=UTC)
#: An argon2 hash in its encoded form: ``$``, ``=``, ``+`` and ``/`` must survive.
HASH = "$argon2id$v=19$m=65536,t=3,p=4$c29tZXNhbHQ$RdescudvJCsgt3ub+b+dWRWJTmaaJObG"
#: Another hash, for a changed password.
OTHER_HASH = (
    "$argon2id$v=19$m=65536,t=3,p=4$b3RoZXJzYWx0$iWh06vD8Fy27wf9npn6FXWiCX4K6pW6Ue1Bnzz07Z8A"
)
MINUTE = timedelta(minutes=1)
HOUR = timedelta(hours=1)
#: Opens one more independent store on the database of the suite's ``people``.
OpenPeople = Callable[[], Awaitable[PeopleStore]]
T = TypeVar("T")
#: How many threads race on one invite.
RACERS = 4
#: How many threads add one person's tokens at once, and the limit they race past.
TOKEN_RACERS, TOKEN_LIMIT = 12, 5


def digest(text: str) -> str:
    """SHA-256 in hex, as the app keeps every secret of a person."""
    return hashlib.sha256(text.encode()).hexdigest()


def person(n: int, *, name: str | None = None) -> Person:
    """The ``n``-th test person, invited at T0, no password yet."""
    return Person(id=f"{n:0{PERSON_ID_LENGTH}x}", name=name or f"name-{n}", created=T0)


def token(n: int, person_id: str, *, created: datetime = T0) -> PersonToken:
    """The ``n``-th test token of ``person_id``."""
    return PersonToken(
        id=f"tok-{n}",
        token_hash=digest(f"token-{n}"),
        person_id=person_id,
        label=f"label {n} ✓",
        created=created,
    )


def session(n: int, person_id: str, *, flash: str | None = None) -> PersonSession:
    """The ``n``-th test session of ``person_id``: signed in at T0, expiring an hour later."""
    login = SessionLogin(
        id_hash=digest(f"session-{n}"),
        csrf=f"csrf-{n}-$=+/",
        created=T0,
        last_seen=T0,
        expires=T0 + HOUR,
        flash=flash,
    )
    return PersonSession(person_id=person_id, login=login)


def owner(n: int = 0, *, name: str = "boss") -> Person:
    """A test owner: the owner's role, the password set, made at T0."""
    return attrs.evolve(person(n, name=name), password_hash=HASH, role=Role.OWNER)


async def active(people: PeopleStore, n: int) -> Person:
    """The ``n``-th person, invited and with the password set."""
    await people.invite(person(n), token_hash=digest(f"invite-{n}"), lifetime=HOUR)
    accepted = await people.accept_invite(digest(f"invite-{n}"), password_hash=HASH)
    assert accepted is not None
    return accepted


class PeopleStoreContract:
    """Subclass and provide the fixtures ``people`` and ``open_people`` (module docstring)."""

    @pytest.fixture
    def clock(self) -> ManualClock:
        """The store's clock; the adapter's fixtures build their stores on it."""
        return ManualClock(T0)

    # -- invites ----------------------------------------------------------------------

    async def test_invite_stores_a_person_without_password(self, people: PeopleStore) -> None:
        """An invited person exists, but cannot sign in yet: no password hash."""
        invite = await people.invite(person(1), token_hash=digest("i"), lifetime=HOUR)
        assert invite.person_id == person(1).id
        assert await people.get_person(person(1).id) == person(1)
        assert await people.find_person("name-1") == person(1)
        assert await people.list_people() == [person(1)]

    async def test_invite_expiry_is_the_stores_clock_plus_lifetime(
        self, clock: ManualClock, people: PeopleStore
    ) -> None:
        """The link's expiry counts from the store's now, not from the person record's time."""
        clock.set(T0 + 3 * HOUR)
        invite = await people.invite(person(1), token_hash=digest("i"), lifetime=INVITE_LIFETIME)
        assert invite.expires == T0 + 3 * HOUR + INVITE_LIFETIME

    async def test_a_taken_name_is_a_conflict(self, people: PeopleStore) -> None:
        """Two people never share a sign-in name; the second invite stores nothing."""
        await people.invite(person(1), token_hash=digest("a"), lifetime=HOUR)
        with pytest.raises(Conflict):
            await people.invite(person(2, name="name-1"), token_hash=digest("b"), lifetime=HOUR)
        assert await people.get_person(person(2).id) is None
        assert await people.accept_invite(digest("b"), password_hash=HASH) is None

    async def test_accept_sets_the_password_once(self, people: PeopleStore) -> None:
        """The link sets the password; a second use of it changes nothing."""
        await people.invite(person(1), token_hash=digest("i"), lifetime=HOUR)
        accepted = await people.accept_invite(digest("i"), password_hash=HASH)
        assert accepted == attrs.evolve(person(1), password_hash=HASH)
        assert accepted.is_active
        assert await people.accept_invite(digest("i"), password_hash=HASH + "x") is None
        assert await people.get_person(person(1).id) == accepted

    async def test_unknown_invite_is_refused(self, people: PeopleStore) -> None:
        """A link nobody made opens nothing."""
        await people.invite(person(1), token_hash=digest("i"), lifetime=HOUR)
        assert await people.accept_invite(digest("j"), password_hash=HASH) is None

    async def test_invite_expires_on_the_stores_clock(
        self, clock: ManualClock, people: PeopleStore
    ) -> None:
        """Up to just before its expiry the link works; at the expiry on the store's clock, not."""
        await people.invite(person(1), token_hash=digest("a"), lifetime=HOUR)
        await people.invite(person(2), token_hash=digest("b"), lifetime=HOUR)
        clock.set(T0 + HOUR - timedelta(microseconds=1))
        assert await people.accept_invite(digest("a"), password_hash=HASH) is not None
        clock.set(T0 + HOUR)
        assert await people.accept_invite(digest("b"), password_hash=HASH) is None
        stored = await people.get_person(person(2).id)
        assert stored is not None
        assert stored.password_hash is None

    async def test_a_disabled_persons_invite_is_refused(self, people: PeopleStore) -> None:
        """Disabling an invited person kills the link before it is used."""
        await people.invite(person(1), token_hash=digest("i"), lifetime=HOUR)
        assert await people.disable_person(person(1).id, now=T0) is True
        assert await people.accept_invite(digest("i"), password_hash=HASH) is None

    async def test_enable_does_not_revive_what_disable_voided(self, people: PeopleStore) -> None:
        """Disabling voids an outstanding invite and link code: re-enabled, neither works again."""
        await people.invite(person(1), token_hash=digest("i"), lifetime=HOUR)
        await people.disable_person(person(1).id, now=T0)
        assert await people.enable_person(person(1).id) is True
        assert await people.accept_invite(digest("i"), password_hash=HASH) is None
        stored = await people.get_person(person(1).id)
        assert stored is not None
        assert stored.password_hash is None
        me = await active(people, 2)
        await people.make_link_code(me.id, code_hash=digest("c"), lifetime=HOUR)
        await people.disable_person(me.id, now=T0)
        await people.enable_person(me.id)
        assert await people.use_link_code(digest("c"), chat_id=77) is None
        assert await people.person_for_chat(77) is None
        # Another person's invite is untouched.
        await people.invite(person(3), token_hash=digest("k"), lifetime=HOUR)
        await people.disable_person(me.id, now=T0)
        assert await people.accept_invite(digest("k"), password_hash=HASH) is not None

    def test_racing_uses_of_one_invite_have_one_winner(
        self, people: PeopleStore, open_people: OpenPeople
    ) -> None:
        """Threads, each with its own store and loop, use one link at once: exactly one wins."""
        asyncio.run(_invite_once(open_people))

        async def use(n: int, ready: Callable[[], object]) -> Person | None:
            store = await open_people()
            try:
                ready()
                return await store.accept_invite(digest("race"), password_hash=f"{HASH}-{n}")
            finally:
                await store.close()

        results = in_threads(RACERS, use)
        winners = [result for result in results if result is not None]
        assert len(winners) == 1
        hashes = [f"{HASH}-{n}" for n in range(RACERS)]
        assert winners[0].password_hash in hashes
        stored = asyncio.run(_read_person(open_people, person(1).id))
        assert stored == winners[0]

    # -- the owner (ADR 76) -----------------------------------------------------------

    async def test_no_owner_at_first(self, people: PeopleStore) -> None:
        """A fresh store has no owner, so the service offers the setup link."""
        assert await people.find_owner() is None
        await active(people, 1)
        assert await people.find_owner() is None

    async def test_created_owner_reads_back_as_a_person(self, people: PeopleStore) -> None:
        """The owner is a person with the owner's role: found by name, id and role alike."""
        boss = owner()
        assert await people.create_owner(boss) is True
        assert await people.find_owner() == boss
        assert await people.find_person("boss") == boss
        assert await people.get_person(boss.id) == boss
        assert (await people.list_people()) == [boss]

    async def test_second_owner_is_refused(self, people: PeopleStore) -> None:
        """Once an owner exists a second setup stores nothing: no takeover through a stale link."""
        await people.create_owner(owner())
        assert await people.create_owner(owner(9, name="other")) is False
        assert await people.find_owner() == owner()
        assert await people.get_person(owner(9).id) is None

    async def test_owner_with_a_taken_name_is_a_conflict(self, people: PeopleStore) -> None:
        """Setup cannot take an invited person's name: names stay unique across roles."""
        await active(people, 1)
        with pytest.raises(Conflict):
            await people.create_owner(owner(2, name="name-1"))
        assert await people.find_owner() is None

    def test_racing_setups_have_one_winner(
        self, people: PeopleStore, open_people: OpenPeople
    ) -> None:
        """Threads, each with its own store and loop, run setup at once: exactly one owner."""

        async def setup(n: int, ready: Callable[[], object]) -> bool:
            store = await open_people()
            try:
                ready()
                return await store.create_owner(owner(n, name=f"boss-{n}"))
            finally:
                await store.close()

        results = in_threads(RACERS, setup)
        assert results.count(True) == 1
        found = asyncio.run(_on_another(open_people, lambda store: store.find_owner()))
        assert found == owner(results.index(True), name=f"boss-{results.index(True)}")

    async def test_set_password_replaces_the_hash_and_ends_sessions(
        self, people: PeopleStore
    ) -> None:
        """A new password is the one read back, and every session of that person ends with it."""
        boss, other = owner(), await active(people, 1)
        await people.create_owner(boss)
        for each in (session(1, boss.id), session(2, boss.id), session(3, other.id)):
            await people.create_person_session(each)
        assert await people.set_password(boss.id, OTHER_HASH) is True
        assert (await people.find_owner()) == attrs.evolve(boss, password_hash=OTHER_HASH)
        assert await people.get_person_session(session(1, boss.id).login.id_hash) is None
        assert await people.get_person_session(session(2, boss.id).login.id_hash) is None
        assert await people.get_person_session(session(3, other.id).login.id_hash) is not None

    async def test_set_password_of_nobody_changes_nothing(self, people: PeopleStore) -> None:
        """Setting the password of an unknown id is no back door to an account."""
        assert await people.set_password(person(5).id, HASH) is False
        assert await people.get_person(person(5).id) is None

    async def test_the_owner_is_never_disabled(self, people: PeopleStore) -> None:
        """Disabling the owner changes nothing: their sessions stay, the panel stays reachable."""
        boss = owner()
        await people.create_owner(boss)
        await people.create_person_session(session(1, boss.id))
        assert await people.disable_person(boss.id, now=T0) is False
        assert (await people.find_owner()) == boss
        assert await people.get_person_session(session(1, boss.id).login.id_hash) is not None

    # -- accounts -------------------------------------------------------------------

    async def test_people_are_listed_oldest_first(self, people: PeopleStore) -> None:
        """The admin list shows people in the order they were invited."""
        later = attrs.evolve(person(1), created=T0 + MINUTE)
        await people.invite(later, token_hash=digest("a"), lifetime=HOUR)
        await people.invite(person(2), token_hash=digest("b"), lifetime=HOUR)
        assert [p.id for p in await people.list_people()] == [person(2).id, person(1).id]

    async def test_unknown_person_is_none(self, people: PeopleStore) -> None:
        """Nobody is found by an id or a name never stored; disabling nobody is False."""
        assert await people.get_person("nobody") is None
        assert await people.find_person("nobody") is None
        assert await people.disable_person("nobody", now=T0) is False

    async def test_disable_keeps_the_first_time(self, people: PeopleStore) -> None:
        """Disabling twice keeps when it first happened."""
        me = await active(people, 1)
        assert await people.disable_person(me.id, now=T0 + MINUTE) is True
        assert await people.disable_person(me.id, now=T0 + HOUR) is True
        stored = await people.get_person(me.id)
        assert stored is not None
        assert stored.disabled == T0 + MINUTE
        assert not stored.is_active

    async def test_a_persons_language_is_kept(
        self, people: PeopleStore, open_people: OpenPeople
    ) -> None:
        """The language chosen is read back by id, name and list, and by another connection."""
        me = await active(people, 1)
        assert me.language is None
        assert await people.set_person_language(me.id, "ru") is True
        assert (await people.get_person(me.id)) == attrs.evolve(me, language="ru")
        found = await people.find_person(me.name)
        assert found is not None
        assert found.language == "ru"
        assert [p.language for p in await people.list_people()] == ["ru"]
        stored = await _read_person(open_people, me.id)
        assert stored is not None
        assert stored.language == "ru"
        assert await people.set_person_language(me.id, None) is True
        again = await people.get_person(me.id)
        assert again is not None
        assert again.language is None
        assert await people.set_person_language("nobody", "ru") is False

    def test_owner_keys_never_equal_a_static_tokens_key(self) -> None:
        """A person's owner key is a digest's width with a colon, which a hex digest never has."""
        key = person_owner(person(1).id)
        assert key == "person:" + person(1).id
        assert len(key) == len(digest("any token")) == 64
        assert ":" not in digest(key)
        with pytest.raises(ValueError, match="hex digits"):
            Person(id="person-1", name="n", created=T0)

    # -- tokens ---------------------------------------------------------------------

    async def test_a_token_finds_its_person(self, people: PeopleStore) -> None:
        """A stored token's hash leads to its active person; an unknown hash to nobody."""
        me = await active(people, 1)
        await people.add_token(token(1, me.id))
        assert await people.person_for_token(token(1, me.id).token_hash) == me
        assert await people.person_for_token(digest("nope")) is None

    async def test_a_token_of_a_person_without_password_finds_nobody(
        self, people: PeopleStore
    ) -> None:
        """Only an active person's token works: an invited person's never does."""
        await people.invite(person(1), token_hash=digest("i"), lifetime=HOUR)
        await people.add_token(token(1, person(1).id))
        assert await people.person_for_token(token(1, person(1).id).token_hash) is None

    async def test_tokens_list_newest_first_and_per_person(self, people: PeopleStore) -> None:
        """The tokens page shows one person's tokens, newest first, field for field."""
        me, other = await active(people, 1), await active(people, 2)
        old, new = token(1, me.id), token(2, me.id, created=T0 + MINUTE)
        for each in (old, token(3, other.id), new):
            await people.add_token(each)
        assert await people.list_tokens(me.id) == [new, old]
        assert await people.list_tokens(other.id) == [token(3, other.id)]

    async def test_a_reused_token_is_a_conflict(self, people: PeopleStore) -> None:
        """Two tokens never share a hash or an id."""
        me = await active(people, 1)
        await people.add_token(token(1, me.id))
        with pytest.raises(Conflict):
            await people.add_token(attrs.evolve(token(1, me.id), id="tok-other"))
        with pytest.raises(Conflict):
            await people.add_token(attrs.evolve(token(1, me.id), token_hash=digest("x")))

    async def test_a_token_past_the_limit_is_not_stored(self, people: PeopleStore) -> None:
        """A person at the limit gets False and no token; another person's tokens do not count."""
        me, other = await active(people, 1), await active(people, 2)
        assert await people.add_token(token(1, other.id), limit=1) is True
        assert await people.add_token(token(2, me.id), limit=1) is True
        assert await people.add_token(token(3, me.id), limit=1) is False
        assert await people.list_tokens(me.id) == [token(2, me.id)]
        assert await people.person_for_token(token(3, me.id).token_hash) is None
        assert await people.revoke_token(me.id, token(2, me.id).id) is True
        assert await people.add_token(token(3, me.id), limit=1) is True

    def test_racing_adds_never_pass_the_token_limit(
        self, people: PeopleStore, open_people: OpenPeople
    ) -> None:
        """Threads with stores and loops of their own add one person's tokens at once: none past."""
        me = asyncio.run(_on_another(open_people, lambda store: active(store, 1)))

        async def add(n: int, ready: Callable[[], object]) -> bool:
            store = await open_people()
            try:
                ready()
                return await store.add_token(token(n, me.id), limit=TOKEN_LIMIT)
            finally:
                await store.close()

        results = in_threads(TOKEN_RACERS, add)
        assert results.count(True) == TOKEN_LIMIT
        stored = asyncio.run(_on_another(open_people, lambda store: store.list_tokens(me.id)))
        assert sorted(t.id for t in stored) == sorted(
            token(n, me.id).id for n, added in enumerate(results) if added
        )

    async def test_revoke_takes_only_ones_own_token(self, people: PeopleStore) -> None:
        """A person revokes their token; another person's id revokes nothing."""
        me, other = await active(people, 1), await active(people, 2)
        mine = token(1, me.id)
        await people.add_token(mine)
        assert await people.revoke_token(other.id, mine.id) is False
        assert await people.person_for_token(mine.token_hash) == me
        assert await people.revoke_token(me.id, mine.id) is True
        assert await people.person_for_token(mine.token_hash) is None
        assert await people.revoke_token(me.id, mine.id) is False

    async def test_disabling_stops_tokens_at_once(self, people: PeopleStore) -> None:
        """A disabled person's token finds nobody from that moment on."""
        me = await active(people, 1)
        await people.add_token(token(1, me.id))
        await people.disable_person(me.id, now=T0)
        assert await people.person_for_token(token(1, me.id).token_hash) is None

    # -- sessions -------------------------------------------------------------------

    async def test_created_session_reads_back(self, people: PeopleStore) -> None:
        """A stored session comes back field for field, times to the microsecond."""
        me = await active(people, 1)
        stored = session(1, me.id, flash="Saved.")
        await people.create_person_session(stored)
        assert await people.get_person_session(stored.login.id_hash) == stored
        assert await people.get_person_session(digest("nope")) is None

    async def test_reused_session_hash_is_a_conflict(self, people: PeopleStore) -> None:
        """Two sessions never share a key."""
        me = await active(people, 1)
        await people.create_person_session(session(1, me.id))
        with pytest.raises(Conflict):
            await people.create_person_session(session(1, me.id, flash="again"))

    async def test_save_writes_what_a_page_view_changes(self, people: PeopleStore) -> None:
        """Saving writes last seen, expiry and flash, and keeps the rest."""
        me = await active(people, 1)
        stored = session(1, me.id)
        await people.create_person_session(stored)
        login = attrs.evolve(
            stored.login,
            last_seen=T0 + MINUTE,
            expires=T0 + 2 * HOUR,
            flash="Token made.",
            csrf="not-stored",
        )
        assert await people.save_person_session(attrs.evolve(stored, login=login)) is True
        read = await people.get_person_session(stored.login.id_hash)
        assert read == attrs.evolve(
            stored,
            login=attrs.evolve(login, csrf=stored.login.csrf),
        )

    async def test_save_never_brings_back_a_deleted_session(self, people: PeopleStore) -> None:
        """A page view finishing after the sign-out does not undo it."""
        me = await active(people, 1)
        stored = session(1, me.id)
        await people.create_person_session(stored)
        await people.delete_person_session(stored.login.id_hash)
        await people.delete_person_session(stored.login.id_hash)
        assert await people.save_person_session(stored) is False
        assert await people.get_person_session(stored.login.id_hash) is None

    async def test_disabling_ends_sessions_at_once(self, people: PeopleStore) -> None:
        """Every session of a disabled person is gone; another person's stays."""
        me, other = await active(people, 1), await active(people, 2)
        for each in (session(1, me.id), session(2, me.id), session(3, other.id)):
            await people.create_person_session(each)
        await people.disable_person(me.id, now=T0)
        assert await people.get_person_session(session(1, me.id).login.id_hash) is None
        assert await people.get_person_session(session(2, me.id).login.id_hash) is None
        assert await people.save_person_session(session(1, me.id)) is False
        assert await people.get_person_session(session(3, other.id).login.id_hash) is not None

    async def test_sweep_removes_sessions_over_at_now(self, people: PeopleStore) -> None:
        """Sessions whose expiry is not after ``now`` are swept; the rest stay."""
        me = await active(people, 1)
        over, live = session(1, me.id), session(2, me.id)
        live = attrs.evolve(
            live, login=attrs.evolve(live.login, expires=T0 + HOUR + timedelta(microseconds=1))
        )
        await people.create_person_session(over)
        await people.create_person_session(live)
        assert await people.delete_expired_person_sessions(now=T0 + HOUR) == 1
        assert await people.get_person_session(over.login.id_hash) is None
        assert await people.get_person_session(live.login.id_hash) == live

    # -- re-enabling (ADR 60) -------------------------------------------------------------

    async def test_enable_lets_the_person_in_with_no_old_token(self, people: PeopleStore) -> None:
        """Re-enabled, the person is active again; their old tokens and sessions stay gone."""
        me = await active(people, 1)
        await people.add_token(token(1, me.id))
        await people.create_person_session(session(1, me.id))
        await people.disable_person(me.id, now=T0)
        assert await people.enable_person(me.id) is True
        stored = await people.get_person(me.id)
        assert stored == me
        assert stored.is_active
        assert await people.person_for_token(token(1, me.id).token_hash) is None
        assert await people.list_tokens(me.id) == []
        assert await people.get_person_session(session(1, me.id).login.id_hash) is None
        assert await people.enable_person("nobody") is False

    async def test_a_deleted_person_leaves_no_row_that_answers(self, people: PeopleStore) -> None:
        """Deleted: no person, token, session, code or chat of theirs; someone else's stay."""
        me, other = await active(people, 1), await active(people, 2)
        for who in (me, other):
            n = 1 if who is me else 2
            await people.add_token(token(n, who.id))
            await people.create_person_session(session(n, who.id))
            await people.make_link_code(who.id, code_hash=digest(f"c{n}"), lifetime=HOUR)
            assert await people.use_link_code(digest(f"c{n}"), chat_id=70 + n) == who
        await people.make_link_code(me.id, code_hash=digest("unused"), lifetime=HOUR)
        assert await people.delete_person(me.id) is True
        assert await people.get_person(me.id) is None
        assert await people.find_person(me.name) is None
        assert await people.person_for_token(token(1, me.id).token_hash) is None
        assert await people.list_tokens(me.id) == []
        assert await people.get_person_session(session(1, me.id).login.id_hash) is None
        assert await people.person_for_chat(71) is None
        assert await people.list_linked_chats(me.id) == []
        assert await people.use_link_code(digest("unused"), chat_id=79) is None
        assert await people.list_people() == [other]
        assert await people.person_for_token(token(2, other.id).token_hash) == other
        assert await people.person_for_chat(72) == other
        assert await people.delete_person(me.id) is False
        # The name is free again.
        await people.invite(person(3, name=me.name), token_hash=digest("again"), lifetime=HOUR)

    # -- Telegram link codes (ADR 60) -----------------------------------------------------

    async def test_a_code_links_a_chat_once(self, clock: ManualClock, people: PeopleStore) -> None:
        """A code links the chat to its person; used again (any chat) it links nothing."""
        me = await active(people, 1)
        code = await people.make_link_code(me.id, code_hash=digest("c"), lifetime=MINUTE)
        assert (code.person_id, code.expires) == (me.id, T0 + MINUTE)
        assert await people.person_for_chat(77) is None
        clock.set(T0 + timedelta(seconds=5))
        assert await people.use_link_code(digest("c"), chat_id=77) == me
        assert await people.person_for_chat(77) == me
        assert await people.use_link_code(digest("c"), chat_id=78) is None
        assert await people.person_for_chat(78) is None
        assert await people.list_linked_chats(me.id) == [
            LinkedChat(chat_id=77, person_id=me.id, linked=T0 + timedelta(seconds=5))
        ]

    async def test_a_wrong_or_expired_code_links_nothing(
        self, clock: ManualClock, people: PeopleStore
    ) -> None:
        """An unknown code, or one at its expiry on the store's clock, links nothing."""
        me = await active(people, 1)
        await people.make_link_code(me.id, code_hash=digest("c"), lifetime=LINK_CODE_LIFETIME)
        assert await people.use_link_code(digest("wrong"), chat_id=77) is None
        clock.set(T0 + LINK_CODE_LIFETIME)
        assert await people.use_link_code(digest("c"), chat_id=77) is None
        assert await people.person_for_chat(77) is None

    async def test_a_new_code_replaces_the_persons_old_one(self, people: PeopleStore) -> None:
        """One live code per person: making another stops the first."""
        me = await active(people, 1)
        await people.make_link_code(me.id, code_hash=digest("old"), lifetime=HOUR)
        await people.make_link_code(me.id, code_hash=digest("new"), lifetime=HOUR)
        assert await people.use_link_code(digest("old"), chat_id=77) is None
        assert await people.use_link_code(digest("new"), chat_id=77) == me

    async def test_a_disabled_persons_code_and_chats_stop(self, people: PeopleStore) -> None:
        """A disabled person's code links nothing and their chats find nobody until re-enabled."""
        me = await active(people, 1)
        await people.make_link_code(me.id, code_hash=digest("a"), lifetime=HOUR)
        await people.use_link_code(digest("a"), chat_id=77)
        await people.make_link_code(me.id, code_hash=digest("b"), lifetime=HOUR)
        await people.disable_person(me.id, now=T0)
        assert await people.use_link_code(digest("b"), chat_id=78) is None
        assert await people.person_for_chat(77) is None
        await people.enable_person(me.id)
        assert await people.person_for_chat(77) == me

    async def test_linking_again_moves_the_chat_and_unlink_ends_it(
        self, people: PeopleStore
    ) -> None:
        """A chat has one person: another's code moves it; unlink by its person or the chat."""
        me, other = await active(people, 1), await active(people, 2)
        await people.make_link_code(me.id, code_hash=digest("a"), lifetime=HOUR)
        await people.use_link_code(digest("a"), chat_id=77)
        await people.make_link_code(other.id, code_hash=digest("b"), lifetime=HOUR)
        await people.use_link_code(digest("b"), chat_id=77)
        assert await people.person_for_chat(77) == other
        assert await people.list_linked_chats(me.id) == []
        assert await people.unlink_chat(77, person_id=me.id) is False
        assert await people.unlink_chat(77, person_id=other.id) is True
        assert await people.person_for_chat(77) is None
        await people.make_link_code(me.id, code_hash=digest("c"), lifetime=HOUR)
        await people.use_link_code(digest("c"), chat_id=77)
        assert await people.unlink_chat(77) is True
        assert await people.unlink_chat(77) is False

    def test_racing_uses_of_one_code_have_one_winner(
        self, people: PeopleStore, open_people: OpenPeople
    ) -> None:
        """Threads, each with its own store and loop, use one code from four chats: one wins."""
        asyncio.run(_code_once(open_people))

        async def use(n: int, ready: Callable[[], object]) -> Person | None:
            store = await open_people()
            try:
                ready()
                return await store.use_link_code(digest("race-code"), chat_id=100 + n)
            finally:
                await store.close()

        results = in_threads(RACERS, use)
        assert len([result for result in results if result is not None]) == 1
        chats = asyncio.run(_chats_of(open_people, person(1).id))
        assert len(chats) == 1
        assert results[chats[0].chat_id - 100] is not None


async def _code_once(open_people: OpenPeople) -> None:
    store = await open_people()
    try:
        await active(store, 1)
        await store.make_link_code(person(1).id, code_hash=digest("race-code"), lifetime=HOUR)
    finally:
        await store.close()


async def _chats_of(open_people: OpenPeople, person_id: str) -> list[LinkedChat]:
    store = await open_people()
    try:
        return await store.list_linked_chats(person_id)
    finally:
        await store.close()


async def _invite_once(open_people: OpenPeople) -> None:
    store = await open_people()
    try:
        await store.invite(person(1), token_hash=digest("race"), lifetime=HOUR)
    finally:
        await store.close()


async def _on_another(open_people: OpenPeople, use: Callable[[PeopleStore], Awaitable[T]]) -> T:
    """What ``use`` makes of one more store on the suite's database, closed after."""
    store = await open_people()
    try:
        return await use(store)
    finally:
        await store.close()


async def _read_person(open_people: OpenPeople, person_id: str) -> Person | None:
    store = await open_people()
    try:
        return await store.get_person(person_id)
    finally:
        await store.close()
