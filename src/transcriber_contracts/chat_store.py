"""The contract every ChatStore adapter passes: the one polling lease, and settings per chat.

Use it from your own tests::

    class TestMyChatStore(ChatStoreContract):
        @pytest.fixture
        async def chats(self, clock, tmp_path):
            store = await MyStore.open(tmp_path / "chats.db", clock=clock)
            yield store
            await store.close()

The fixture must yield a fresh, empty store on the suite's ``clock`` (a
``ManualClock`` the suite moves; the store judges the lease by it).
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import attrs
import pytest

from transcriber_core.clocks import ManualClock
from transcriber_core.entities import ChatMode, ChatSettings
from transcriber_core.ports import ChatStore

T0 = datetime(2026, 3, 1, 12, 0, 0, 123457, tzinfo=UTC)
LEASE = timedelta(seconds=30)
CHAT = -1001234567890


class ChatStoreContract:
    """Subclass and provide an async fixture ``chats`` on the suite's ``clock``."""

    @pytest.fixture
    def clock(self) -> ManualClock:
        """The store's clock; the adapter's fixture builds its store on it."""
        return ManualClock(T0)

    async def test_a_free_lease_is_taken_and_then_held(
        self, clock: ManualClock, chats: ChatStore
    ) -> None:
        """The first taker gets the lease; a second one gets nothing while it is held."""
        held = await chats.take_poll_lease("a", lease=LEASE)
        assert held is not None
        assert held.holder == "a"
        assert await chats.take_poll_lease("b", lease=LEASE) is None

    async def test_of_takers_at_once_one_wins(self, clock: ManualClock, chats: ChatStore) -> None:
        """Eight processes asking at once: exactly one holds the lease."""
        taken = await asyncio.gather(
            *(chats.take_poll_lease(f"p{i}", lease=LEASE) for i in range(8))
        )
        assert len([lease for lease in taken if lease is not None]) == 1

    async def test_an_expired_lease_is_taken_over_with_a_new_fence(
        self, clock: ManualClock, chats: ChatStore
    ) -> None:
        """When the holder stops renewing, another takes over and the old holder cannot renew."""
        old = await chats.take_poll_lease("a", lease=LEASE)
        assert old is not None
        clock.advance(LEASE)
        new = await chats.take_poll_lease("b", lease=LEASE)
        assert new is not None
        assert new.fence > old.fence
        assert not await chats.renew_poll_lease(old, lease=LEASE)
        assert await chats.renew_poll_lease(new, lease=LEASE)

    async def test_renewal_keeps_the_lease(self, clock: ManualClock, chats: ChatStore) -> None:
        """A holder renewing before the end keeps it past the first lease's end."""
        held = await chats.take_poll_lease("a", lease=LEASE)
        assert held is not None
        clock.advance(LEASE - timedelta(seconds=1))
        assert await chats.renew_poll_lease(held, lease=LEASE)
        clock.advance(timedelta(seconds=2))
        assert await chats.take_poll_lease("b", lease=LEASE) is None

    async def test_a_released_lease_is_free_at_once(
        self, clock: ManualClock, chats: ChatStore
    ) -> None:
        """Release lets another take the lease without waiting for it to run out."""
        held = await chats.take_poll_lease("a", lease=LEASE)
        assert held is not None
        await chats.release_poll_lease(held)
        assert await chats.take_poll_lease("b", lease=LEASE) is not None

    async def test_a_stale_release_frees_nothing(
        self, clock: ManualClock, chats: ChatStore
    ) -> None:
        """A holder that lost the lease cannot release its successor's."""
        old = await chats.take_poll_lease("a", lease=LEASE)
        assert old is not None
        clock.advance(LEASE)
        assert await chats.take_poll_lease("b", lease=LEASE) is not None
        await chats.release_poll_lease(old)
        assert await chats.take_poll_lease("c", lease=LEASE) is None

    async def test_a_chat_never_set_has_the_defaults(self, chats: ChatStore) -> None:
        """An unknown chat detects the language and transcribes every recording."""
        assert await chats.chat_settings(CHAT) == ChatSettings(chat_id=CHAT)

    async def test_each_setting_is_kept_and_read_back_alone(self, chats: ChatStore) -> None:
        """Language and mode are kept one at a time, each leaving the other, for that chat alone."""
        assert await chats.set_chat_language(CHAT, "ru") == ChatSettings(
            chat_id=CHAT, language="ru"
        )
        both = ChatSettings(chat_id=CHAT, language="ru", mode=ChatMode.COMMAND)
        assert await chats.set_chat_mode(CHAT, ChatMode.COMMAND) == both
        assert await chats.chat_settings(CHAT) == both
        cleared = await chats.set_chat_language(CHAT, None)
        assert cleared == ChatSettings(chat_id=CHAT, mode=ChatMode.COMMAND)
        assert await chats.chat_settings(CHAT + 1) == ChatSettings(chat_id=CHAT + 1)

    async def test_a_new_chats_mode_keeps_the_default_language(self, chats: ChatStore) -> None:
        """Setting only the mode of an unknown chat leaves its language at auto."""
        settings = await chats.set_chat_mode(CHAT, ChatMode.COMMAND)
        assert settings == ChatSettings(chat_id=CHAT, mode=ChatMode.COMMAND)

    async def test_the_summary_setting_is_kept_apart_from_the_others(
        self, chats: ChatStore
    ) -> None:
        """``/summary auto`` then ``off`` read back (off kept as off), the rest untouched."""
        await chats.set_chat_language(CHAT, "ru")
        on = await chats.set_chat_summary(CHAT, True)
        assert on == ChatSettings(chat_id=CHAT, language="ru", summary=True)
        assert await chats.chat_settings(CHAT) == on
        assert await chats.set_chat_mode(CHAT, ChatMode.COMMAND) == attrs.evolve(
            on, mode=ChatMode.COMMAND
        )
        assert await chats.chat_settings(CHAT + 1) == ChatSettings(chat_id=CHAT + 1)
        off = await chats.set_chat_summary(CHAT, False)
        assert off == ChatSettings(
            chat_id=CHAT, language="ru", mode=ChatMode.COMMAND, summary=False
        )
        assert await chats.chat_settings(CHAT) == off
        new = await chats.set_chat_summary(CHAT + 2, True)
        assert new == ChatSettings(chat_id=CHAT + 2, summary=True)
        assert await chats.set_chat_summary(CHAT + 2, None) == ChatSettings(chat_id=CHAT + 2)

    async def test_a_chat_that_never_chose_has_no_summary_choice(self, chats: ChatStore) -> None:
        """A chat whose language alone was set leaves its summary to the service (None)."""
        settings = await chats.set_chat_language(CHAT, "en")
        assert settings.summary is None
        assert (await chats.chat_settings(CHAT)).summary is None

    async def test_two_settings_changed_at_once_are_both_kept(self, chats: ChatStore) -> None:
        """Two processes changing the language and the mode at once: neither change is lost."""
        await asyncio.gather(
            chats.set_chat_language(CHAT, "en"), chats.set_chat_mode(CHAT, ChatMode.COMMAND)
        )
        assert await chats.chat_settings(CHAT) == ChatSettings(
            chat_id=CHAT, language="en", mode=ChatMode.COMMAND
        )
