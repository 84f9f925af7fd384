"""Several API processes in polling mode: one polls at a time, by a lease in the database."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path

import pytest
from aiogram import Bot

from tests.support.fake_bot_api import TOKEN, FakeBotApi, close_bot
from tests.support.world import make_world
from transcriber_adapters.sqlite import SqliteChatStore
from transcriber_adapters.telegram import make_bot
from transcriber_app.bot import BotPolling, make_dispatcher
from transcriber_app.bot.texts import HELP_TEXT

CHAT = 5151
#: Short enough that a takeover happens within the test's waits.
LEASE = timedelta(milliseconds=600)
#: For the test that renewals keep the lease: renewed every 1.5 s, it is lost only if the
#: holder's loop stalls for 3 s. At 0.6 s a 0.4 s stall of a loaded box (CI runs beside other
#: work) handed it over without a bug, as a real stall past its lease would.
KEPT_LEASE = timedelta(milliseconds=4500)
#: Long enough that nothing but a release hands it over within a test: at least 20 s of it
#: are left when its holder stops, and the others try every 10 s (a third of it).
LONG_LEASE = timedelta(seconds=30)


async def held_by(pollers: list[BotPolling]) -> BotPolling:
    """The one poller holding the lease, once one does (bounded); never two at once."""
    waits = [asyncio.ensure_future(poller.holding.wait()) for poller in pollers]
    try:
        async with asyncio.timeout(5):
            await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for waiting in waits:
            waiting.cancel()
    holders = [poller for poller in pollers if poller.held is not None]
    assert len(holders) == 1, "not exactly one poller holds the lease"
    return holders[0]


@pytest.fixture
async def api() -> AsyncIterator[FakeBotApi]:
    """A fake Bot API server."""
    async with FakeBotApi() as server:
        yield server


@pytest.fixture
async def pollers(
    request: pytest.FixtureRequest, tmp_path: Path, api: FakeBotApi
) -> AsyncIterator[list[BotPolling]]:
    """Two pollers as two API processes would run them: own bots, one SQLite database.

    Their lease is ``LEASE`` unless the test gives another (``indirect`` parametrize).
    """
    lease: timedelta = getattr(request, "param", LEASE)
    world = make_world(tmp_path)
    async with contextlib.AsyncExitStack() as stack:
        started: list[BotPolling] = []
        for name in ("api-1", "api-2"):
            chats = await SqliteChatStore.open(tmp_path / "jobs.db")
            stack.push_async_callback(chats.close)
            bot: Bot = make_bot(TOKEN, api.url)
            stack.push_async_callback(close_bot, bot)
            polling = BotPolling(
                bot,
                make_dispatcher(world.services),
                polling_timeout=1,
                chats=chats,
                holder=name,
                lease=lease,
            )
            await polling.start()
            stack.push_async_callback(polling.stop, 1)
            started.append(polling)
        yield started


@pytest.mark.parametrize("pollers", [KEPT_LEASE], indirect=True)
async def test_one_poller_holds_the_lease_and_answers_each_update_once(
    api: FakeBotApi, pollers: list[BotPolling]
) -> None:
    """Two processes in polling mode: one holds the lease, each message is answered once."""
    holder = await held_by(pollers)
    for _ in range(3):
        await api.push_text(CHAT, "hello")
    replies = await api.wait_sent(CHAT, 3)
    assert [reply.text for reply in replies] == [HELP_TEXT] * 3
    [other] = [poller for poller in pollers if poller is not holder]
    # Renewals keep it: over twice the lease, the other never takes it.
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(other.holding.wait(), 2 * KEPT_LEASE.total_seconds())
    assert await held_by(pollers) is holder
    assert len(api.sent_to(CHAT)) == 3


async def test_another_poller_takes_over_when_the_holder_dies(
    api: FakeBotApi, pollers: list[BotPolling]
) -> None:
    """The holder dies without a word (no release): the other takes the lease and answers."""
    holder = await held_by(pollers)
    [other] = [poller for poller in pollers if poller is not holder]
    # A death, not a stop: nothing released, nothing confirmed.
    task = holder._task
    assert task is not None
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    assert await held_by([other]) is other
    await api.push_text(CHAT, "anyone there?")
    [reply] = await api.wait_sent(CHAT, 1)
    assert reply.text == HELP_TEXT


@pytest.mark.parametrize("pollers", [LONG_LEASE], indirect=True)
async def test_a_clean_stop_hands_the_lease_over_at_once(
    api: FakeBotApi, pollers: list[BotPolling]
) -> None:
    """A stopped holder releases the lease: the other polls without waiting for it to run out."""
    holder = await held_by(pollers)
    [other] = [poller for poller in pollers if poller is not holder]
    await holder.stop(1)
    assert holder.held is None
    # Its next try (within 10 s) finds the lease free; unreleased, 20 s of it would be left.
    async with asyncio.timeout(LONG_LEASE.total_seconds() / 2):
        await other.holding.wait()


async def test_polling_takes_back_a_webhook_left_by_webhook_mode(tmp_path: Path) -> None:
    """A webhook set earlier (getUpdates would be 409) is deleted at start, and updates flow."""
    async with FakeBotApi() as api:
        api.webhook = {"url": "https://old.example/telegram/webhook"}
        bot = make_bot(TOKEN, api.url)
        polling = BotPolling(bot, make_dispatcher(make_world(tmp_path).services), polling_timeout=1)
        await polling.start()
        try:
            await api.push_text(CHAT, "/help")
            [reply] = await api.wait_sent(CHAT, 1)
        finally:
            await polling.stop(1)
            await close_bot(bot)
    assert reply.text == HELP_TEXT
    assert api.webhook is None
    assert "getupdates" in api.calls
