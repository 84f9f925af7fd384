"""Summaries in Telegram chats: /summary auto|off, the Summary button, the summary sent (ADR 92)."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

import attrs
import pytest

from tests.support.fake_bot_api import TOKEN, FakeBotApi, Sent, close_bot
from tests.support.fake_chat import API_KEY, MODEL, FakeChatServer, Reply
from tests.support.world import World, make_world
from transcriber_adapters.chat_model import OpenAIChatModel
from transcriber_adapters.memory import MemoryChatStore, MemorySummaryStore
from transcriber_adapters.telegram import TelegramNotifier, make_bot
from transcriber_app.bot import BotPolling, make_dispatcher
from transcriber_app.bot.texts import ENGLISH, RUSSIAN
from transcriber_core.entities import ChatMode
from transcriber_core.services import Services
from transcriber_core.summaries import SummaryState
from transcriber_core.worker import Workers

PRIVATE = 7101
TRANSCRIPT = "we ship the release on friday"
#: The fake chat server's summary of a transcript without speakers (``fake_chat.made_up``).
PARAGRAPH = "A talk between nobody named."


@attrs.define
class Bot:
    """A bot polling the fake Bot API, its workers, and the fake chat server when ``[llm]``."""

    api: FakeBotApi
    world: World
    chats: MemoryChatStore
    services: Services
    #: The fake chat server; None without ``[llm]``.
    fake: FakeChatServer | None = None

    async def voice(self, chat_id: int = PRIVATE) -> int:
        """Push a voice note with a new file in ``chat_id``; its message id."""
        return await self.api.push_media(chat_id, "voice", self.api.add_file(b"voice bytes"))

    async def transcript(self, chat_id: int = PRIVATE) -> Sent:
        """The status message once it has been edited into the transcript."""
        return await self.api.wait_shown(chat_id, TRANSCRIPT)

    async def summary(self, chat_id: int = PRIVATE) -> Sent:
        """The bot's message carrying the recording's summary, once sent."""
        return await self.api.wait_shown_where(chat_id, lambda sent: PARAGRAPH in (sent.text or ""))


@contextlib.asynccontextmanager
async def running(tmp_path: Path, *, llm: bool, auto_summary: bool = False) -> AsyncIterator[Bot]:
    """The bot, its workers (summary loop included) and a chat store; with ``llm`` a model."""
    async with contextlib.AsyncExitStack() as stack:
        api = await stack.enter_async_context(FakeBotApi())
        world = make_world(tmp_path)
        world.recognizer.text = TRANSCRIPT
        bot = make_bot(TOKEN, api.url)
        stack.push_async_callback(close_bot, bot)
        services = attrs.evolve(world.services, notifier=TelegramNotifier(bot, summaries=llm))
        fake = None
        if llm:
            fake = await stack.enter_async_context(FakeChatServer())
            model = OpenAIChatModel(base_url=fake.base_url, model=MODEL, api_key=API_KEY)
            stack.push_async_callback(model.close)
            repo = world.repo
            assert hasattr(repo, "database")
            summaries = MemorySummaryStore(database=repo.database)
            services = attrs.evolve(
                services,
                language_model=model,
                summaries=summaries,
                settings=attrs.evolve(services.settings, auto_summary=auto_summary),
            )
        workers = Workers(services)
        workers.start()
        stack.push_async_callback(workers.drain, 1)
        store = MemoryChatStore(world.clock)
        polling = BotPolling(bot, make_dispatcher(services, chats=store), polling_timeout=10)
        await polling.start()
        stack.push_async_callback(polling.stop, 1)
        yield Bot(api=api, world=world, chats=store, services=services, fake=fake)


@pytest.fixture
async def with_llm(tmp_path: Path) -> AsyncIterator[Bot]:
    """The bot with ``[llm]``."""
    async with running(tmp_path, llm=True) as bot:
        yield bot


@pytest.fixture
async def without_llm(tmp_path: Path) -> AsyncIterator[Bot]:
    """The bot without ``[llm]``."""
    async with running(tmp_path, llm=False) as bot:
        yield bot


async def test_summary_auto_then_a_voice_note_brings_its_summary(with_llm: Bot) -> None:
    """After /summary auto a voice note's summary follows its transcript, as a reply to it."""
    await with_llm.api.push_text(PRIVATE, "/summary auto")
    [answer] = await with_llm.api.wait_sent(PRIVATE, 1)
    assert answer.text == ENGLISH.summary_set[True]
    assert (await with_llm.chats.chat_settings(PRIVATE)).summary
    message_id = await with_llm.voice()
    await with_llm.transcript()
    summary = await with_llm.summary()
    assert summary.reply_to == message_id
    assert summary.text is not None
    assert summary.text.startswith("Summary\n" + PARAGRAPH)
    assert "Key points\n• " + TRANSCRIPT in summary.text
    assert "Action items\n• send the report" in summary.text


async def test_the_summary_button_asks_for_it_once_and_it_arrives(with_llm: Bot) -> None:
    """Without /summary a transcript has a Summary button; pressing it brings the summary."""
    await with_llm.voice()
    transcript = await with_llm.transcript()
    [_, [(label, data)]] = transcript.buttons
    assert label == "Summary"
    [job] = await with_llm.world.repo.list_jobs()
    assert with_llm.services.summaries is not None
    assert await with_llm.services.summaries.get_summary(job.id) is None
    query = await with_llm.api.press(transcript, data)
    assert await with_llm.api.wait_answered(query) == ENGLISH.summary_asked
    await with_llm.summary()
    stored = await with_llm.services.summaries.get_summary(job.id)
    assert stored is not None
    assert stored.state is SummaryState.DONE


async def test_a_summary_the_model_refuses_is_told_with_its_reason(with_llm: Bot) -> None:
    """A summary that failed (the server refused it) is sent too: the chat is told why."""
    assert with_llm.fake is not None
    with_llm.fake.answer_next(Reply(status=404))
    await with_llm.api.push_text(PRIVATE, "/summary auto")
    await with_llm.api.wait_sent(PRIVATE, 1)
    message_id = await with_llm.voice()
    failed = await with_llm.api.wait_shown_where(
        PRIVATE, lambda sent: (sent.text or "").startswith("Could not summarise")
    )
    assert failed.reply_to == message_id
    assert "refused" in (failed.text or "")


async def test_a_button_of_another_chat_queues_nothing(with_llm: Bot) -> None:
    """A Summary button's data naming another chat's recording is answered "gone"."""
    await with_llm.voice()
    transcript = await with_llm.transcript()
    [_, [(_, data)]] = transcript.buttons
    elsewhere = attrs.evolve(transcript, chat_id=PRIVATE + 1)
    query = await with_llm.api.press(elsewhere, data)
    assert await with_llm.api.wait_answered(query) == ENGLISH.transcript_gone
    [job] = await with_llm.world.repo.list_jobs()
    assert with_llm.services.summaries is not None
    assert await with_llm.services.summaries.get_summary(job.id) is None


async def test_without_llm_no_button_and_the_command_says_so(without_llm: Bot) -> None:
    """Without ``[llm]`` a transcript has SRT and VTT only; /summary says it is not offered."""
    await without_llm.voice()
    transcript = await without_llm.transcript()
    assert [[label for label, _ in row] for row in transcript.buttons] == [["SRT", "VTT"]]
    await without_llm.api.push_text(PRIVATE, "/summary auto", language_code="ru")
    said = await without_llm.api.wait_sent(PRIVATE, 2)
    assert said[1].text == RUSSIAN.summary_unavailable
    assert not (await without_llm.chats.chat_settings(PRIVATE)).summary


async def test_summary_off_declines_the_services_auto_summary(tmp_path: Path) -> None:
    """With ``auto_summary`` on a chat that never chose gets summaries; after /summary off none."""
    other = PRIVATE + 1
    async with running(tmp_path, llm=True, auto_summary=True) as bot:
        await bot.api.push_text(PRIVATE, "/settings")
        [shown] = await bot.api.wait_sent(PRIVATE, 1)
        assert (shown.text or "").endswith(
            "\nsummary: auto (every recording), this service's default"
        )
        await bot.voice()
        await bot.summary()
        await bot.api.push_text(other, "/summary off")
        [done] = await bot.api.wait_sent(other, 1)
        assert done.text == ENGLISH.summary_set[False]
        await bot.api.push_text(other, "/settings")
        _, shown = await bot.api.wait_sent(other, 2)
        assert (shown.text or "").endswith("\nsummary: off")
        await bot.voice(other)
        await bot.transcript(other)
        assert bot.services.summaries is not None
        asked = {
            job.origin.chat_id: await bot.services.summaries.get_summary(job.id) is not None
            for job in await bot.world.repo.list_jobs()
        }
        assert asked == {PRIVATE: True, other: False}


async def test_settings_name_no_summary_without_llm(without_llm: Bot) -> None:
    """Without ``[llm]`` /settings shows language and mode alone, no summary line."""
    await without_llm.api.push_text(PRIVATE, "/settings")
    [shown] = await without_llm.api.wait_sent(PRIVATE, 1)
    assert shown.text == ENGLISH.settings.format(
        language=ENGLISH.auto, mode=ENGLISH.modes[ChatMode.AUTO]
    )
