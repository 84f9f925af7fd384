"""Links sent to the bot (SPEC §28): taken like recordings in private, in groups when addressed."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator
from pathlib import Path

import attrs
import pytest

from tests.support.fake_bot_api import TOKEN, FakeBotApi, close_bot
from tests.support.world import World, make_world
from transcriber_adapters.memory import MemoryChatStore, MemoryFetcher, Served
from transcriber_adapters.telegram import TelegramNotifier, make_bot
from transcriber_adapters.telegram.notifier import ACCEPTED_TEXT
from transcriber_app.bot import BotPolling, make_dispatcher
from transcriber_app.bot.texts import ENGLISH, RUSSIAN, duplicate_text
from transcriber_core.entities import Job, State
from transcriber_core.worker import Workers

PRIVATE = 7101
GROUP = -1007101
MEMBER = 602
TRANSCRIPT = "a talk fetched from a link"
LINK = "https://media.example.org/talks/7.mp3?sig=TOPSECRET"
PLAYLIST = "https://video.example.org/playlist?list=TOPSECRET"


@attrs.define
class Bot:
    """The bot polling a fake Bot API, its workers on the memory world, links from a map."""

    api: FakeBotApi
    world: World
    fetcher: MemoryFetcher

    async def jobs(self) -> list[Job]:
        return await self.world.repo.list_jobs()


@pytest.fixture
async def bot(tmp_path: Path) -> AsyncIterator[Bot]:
    async with contextlib.AsyncExitStack() as stack:
        api = await stack.enter_async_context(FakeBotApi())
        world = make_world(tmp_path)
        world.recognizer.text = TRANSCRIPT
        fetcher = MemoryFetcher(
            {
                LINK: Served(data=b"\x01" * 16_000, title="Talk 7"),
                PLAYLIST: Served(refused_at_check="playlist_not_supported"),
            }
        )
        client = make_bot(TOKEN, api.url)
        stack.push_async_callback(close_bot, client)
        services = attrs.evolve(world.services, notifier=TelegramNotifier(client), fetcher=fetcher)
        workers = Workers(services)
        workers.start()
        stack.push_async_callback(workers.drain, 1)
        store = MemoryChatStore(world.clock)
        polling = BotPolling(client, make_dispatcher(services, chats=store), polling_timeout=10)
        await polling.start()
        stack.push_async_callback(polling.stop, 1)
        yield Bot(api=api, world=world, fetcher=fetcher)


async def test_a_link_in_private_is_fetched_and_transcribed(bot: Bot) -> None:
    """A message that is a link is acknowledged, fetched, and answered with its text."""
    message_id = await bot.api.push_text(PRIVATE, LINK)
    status = await bot.api.wait_shown(PRIVATE, TRANSCRIPT)
    assert (status.history[0], status.reply_to) == (ACCEPTED_TEXT, message_id)
    [job] = await bot.jobs()
    assert (job.state, job.source_url) == (State.DONE, LINK)
    assert job.source_file_id is not None
    assert [call.url for call in bot.fetcher.calls] == [LINK]


async def test_the_same_link_again_is_the_first_job(bot: Bot) -> None:
    """A link sent twice in one chat is one job; the second is told so."""
    await bot.api.push_text(PRIVATE, LINK)
    await bot.api.wait_shown(PRIVATE, TRANSCRIPT)
    again = await bot.api.push_text(PRIVATE, f"  {LINK}  ")
    *_, told = await bot.api.wait_sent(PRIVATE, 2)
    [job] = await bot.jobs()
    assert (told.text, told.reply_to) == (duplicate_text(job, ENGLISH), again)


async def test_a_refused_link_is_told_in_the_senders_language_without_the_link(
    bot: Bot, caplog: pytest.LogCaptureFixture
) -> None:
    """A playlist: refused at once in Russian for a Russian sender; no job, no secret told."""
    caplog.set_level(logging.DEBUG)
    message_id = await bot.api.push_text(PRIVATE, PLAYLIST, language_code="ru")
    [reply] = await bot.api.wait_sent(PRIVATE, 1)
    assert (reply.text, reply.reply_to) == (
        RUSSIAN.link_refusals["playlist_not_supported"],
        message_id,
    )
    assert await bot.jobs() == []
    assert "TOPSECRET" not in caplog.text


async def test_text_with_a_link_inside_is_not_a_link_message(bot: Bot) -> None:
    """A sentence that contains a link gets the help text: only a bare link is taken."""
    await bot.api.push_text(PRIVATE, f"look at this {LINK}")
    [reply] = await bot.api.wait_sent(PRIVATE, 1)
    assert reply.text == ENGLISH.help
    assert await bot.jobs() == []


async def test_in_a_group_a_link_is_taken_only_when_addressed(bot: Bot) -> None:
    """A bare link in a group is ignored; one mentioning the bot, or /transcribe on it, is taken."""
    ignored = await bot.api.push_text(GROUP, LINK, user_id=MEMBER)
    mentioned = await bot.api.push_text(GROUP, f"@test_bot {LINK}", user_id=MEMBER)
    status = await bot.api.wait_shown(GROUP, TRANSCRIPT)
    assert status.reply_to == mentioned
    [job] = await bot.jobs()
    assert job.origin.message_id == mentioned
    assert ignored != mentioned
    other = LINK.replace("7.mp3", "8.mp3")
    bot.fetcher.served[other] = Served(data=b"\x02" * 16_000)
    posted = await bot.api.push_text(GROUP, other, user_id=MEMBER)
    await bot.api.push_text(GROUP, "/transcribe", reply_to=posted, user_id=MEMBER)
    answered = await bot.api.wait_shown_where(
        GROUP, lambda sent: sent.reply_to == posted and sent.text == TRANSCRIPT
    )
    assert answered.reply_to == posted
    assert len(await bot.jobs()) == 2
