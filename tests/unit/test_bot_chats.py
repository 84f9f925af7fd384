"""The bot in chats: settings per chat, Russian and English, groups and their modes (SPEC §21)."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator
from pathlib import Path

import attrs
import pytest

from tests.support.fake_bot_api import (
    GROUP_TITLE,
    SENDER_FIRST_NAME,
    SENDER_USERNAME,
    TOKEN,
    FakeBotApi,
    Sent,
    close_bot,
)
from tests.support.subtitles import parsed_srt, parsed_vtt
from tests.support.world import World, make_world
from transcriber_adapters.memory import MemoryChatStore
from transcriber_adapters.telegram import TelegramNotifier, make_bot
from transcriber_adapters.telegram.notifier import ACCEPTED_TEXT
from transcriber_app.bot import BotPolling, make_dispatcher
from transcriber_app.bot.texts import ENGLISH, RUSSIAN, TEXTS, texts_for
from transcriber_core.entities import ChatMode, ChatSettings, Job
from transcriber_core.services import Services
from transcriber_core.worker import Workers

PRIVATE = 7001
GROUP = -1007001
ADMIN = 501
MEMBER = 502
TRANSCRIPT = "hello from the group"


@attrs.define
class Chats:
    """A bot polling the fake server, its chat store, and workers on the memory world."""

    api: FakeBotApi
    world: World
    chats: MemoryChatStore
    services: Services
    polling: BotPolling

    async def jobs(self) -> list[Job]:
        """Every job, newest first."""
        return await self.world.repo.list_jobs()

    async def voice(self, chat_id: int, data: bytes = b"voice bytes", **options: object) -> int:
        """Push a voice note with a new file of ``data`` in ``chat_id``; its message id."""
        file = self.api.add_file(data)
        return await self.api.push_media(chat_id, "voice", file, **options)  # type: ignore[arg-type]

    async def transcript(self, chat_id: int) -> Sent:
        """The job's status message once it has been edited into the transcript."""
        return await self.api.wait_shown(chat_id, TRANSCRIPT)

    async def said(self, chat_id: int, count: int) -> list[Sent]:
        """The first ``count`` messages the bot sent to ``chat_id``, once it has."""
        return (await self.api.wait_sent(chat_id, count))[:count]


@pytest.fixture
async def chats(tmp_path: Path) -> AsyncIterator[Chats]:
    """The bot, its workers and a chat store of its own; all stopped after the test."""
    async with contextlib.AsyncExitStack() as stack:
        api = await stack.enter_async_context(FakeBotApi())
        api.admins[GROUP] = {ADMIN}
        world = make_world(tmp_path)
        world.recognizer.text = TRANSCRIPT
        bot = make_bot(TOKEN, api.url)
        stack.push_async_callback(close_bot, bot)
        services = attrs.evolve(world.services, notifier=TelegramNotifier(bot))
        workers = Workers(services)
        workers.start()
        stack.push_async_callback(workers.drain, 1)
        store = MemoryChatStore(world.clock)
        polling = BotPolling(bot, make_dispatcher(services, chats=store), polling_timeout=10)
        await polling.start()
        stack.push_async_callback(polling.stop, 1)
        yield Chats(api=api, world=world, chats=store, services=services, polling=polling)


async def test_language_is_kept_per_chat_shown_and_asked_of_the_recognizer(chats: Chats) -> None:
    """/language ru is kept, answered in Russian, shown by /settings and asked for the next job."""
    await chats.api.push_text(PRIVATE, "/language ru")
    [done] = await chats.said(PRIVATE, 1)
    assert done.text == RUSSIAN.language_set.format(language="ru")
    assert await chats.chats.chat_settings(PRIVATE) == ChatSettings(chat_id=PRIVATE, language="ru")
    await chats.api.push_text(PRIVATE, "/settings")
    shown = (await chats.said(PRIVATE, 2))[1]
    assert shown.text is not None
    assert "ru" in shown.text
    assert shown.text.startswith("Настройки")
    await chats.voice(PRIVATE)
    await chats.transcript(PRIVATE)
    [job] = await chats.jobs()
    assert job.language_requested == "ru"


async def test_language_the_recognizer_lacks_is_refused_with_the_accepted_values(
    chats: Chats,
) -> None:
    """/language xx names every accepted value, as the HTTP field does, and changes nothing."""
    await chats.api.push_text(PRIVATE, "/language xx")
    [refused] = await chats.said(PRIVATE, 1)
    assert refused.text is not None
    assert "auto, de, en" in refused.text
    assert chats.chats.saves == []


async def test_language_auto_goes_back_to_detection(chats: Chats) -> None:
    """/language auto clears the chat's language; /language alone says what it is."""
    await chats.chats.set_chat_language(PRIVATE, "en")
    await chats.api.push_text(PRIVATE, "/language auto")
    await chats.api.push_text(PRIVATE, "/language")
    _, current = await chats.said(PRIVATE, 2)
    assert (await chats.chats.chat_settings(PRIVATE)).language is None
    assert current.text is not None
    assert ENGLISH.auto in current.text


@pytest.mark.parametrize(("code", "texts"), [("ru", RUSSIAN), ("ru-RU", RUSSIAN), ("en", ENGLISH)])
async def test_help_is_in_the_senders_language(chats: Chats, code: str, texts: object) -> None:
    """/start answers in the sender's Telegram language when the chat has none of its own."""
    await chats.api.push_text(PRIVATE, "/start", language_code=code)
    [reply] = await chats.said(PRIVATE, 1)
    assert reply.text == texts.help  # type: ignore[attr-defined]


def test_the_chats_language_outranks_the_senders() -> None:
    """A chat set to English answers a Russian-speaking sender in English, and vice versa."""
    assert texts_for(ChatSettings(chat_id=1, language="en"), "ru") is ENGLISH
    assert texts_for(ChatSettings(chat_id=1, language="ru"), "en") is RUSSIAN
    assert texts_for(ChatSettings(chat_id=1, language="de"), None) is ENGLISH
    assert set(TEXTS) == {"en", "ru"}


def test_russian_and_english_texts_have_the_same_placeholders() -> None:
    """Every reply has the same {fields} in both languages, so neither fails to format."""
    for field in attrs.fields(type(ENGLISH)):
        english, russian = getattr(ENGLISH, field.name), getattr(RUSSIAN, field.name)
        if isinstance(english, str):
            assert _fields(english) == _fields(russian), field.name
        else:
            assert {k: _fields(v) for k, v in english.items()} == {
                k: _fields(v) for k, v in russian.items()
            }


def _fields(text: str) -> set[str]:
    import string  # noqa: PLC0415

    return {name for _, name, _, _ in string.Formatter().parse(text) if name}


async def test_a_members_voice_note_in_a_group_is_answered_as_a_reply(chats: Chats) -> None:
    """In a supergroup the acknowledgement and the transcript reply to the member's message."""
    message_id = await chats.voice(GROUP, user_id=MEMBER)
    status = await chats.transcript(GROUP)
    assert (status.history[0], status.reply_to) == (ACCEPTED_TEXT, message_id)
    assert chats.api.sent_to(GROUP) == [status]


async def test_a_group_hears_no_help_for_ordinary_talk(chats: Chats) -> None:
    """Members talking among themselves get nothing; a command addressed to the bot does."""
    await chats.api.push_text(GROUP, "see you tomorrow", user_id=MEMBER)
    await chats.api.push_text(GROUP, "/help", user_id=MEMBER)
    [reply] = await chats.said(GROUP, 1)
    assert reply.text == ENGLISH.help
    assert len(chats.api.sent_to(GROUP)) == 1


async def test_mode_command_by_a_member_is_refused(chats: Chats) -> None:
    """Only administrators change a group's mode: a member is told so, nothing changes."""
    await chats.api.push_text(GROUP, "/mode command", user_id=MEMBER)
    [refused] = await chats.said(GROUP, 1)
    assert refused.text == ENGLISH.not_admin
    assert (await chats.chats.chat_settings(GROUP)).mode is ChatMode.AUTO
    assert "getchatmember" in chats.api.calls


async def test_in_command_mode_only_what_is_asked_for_is_transcribed(chats: Chats) -> None:
    """After an admin's /mode command a voice note waits; /transcribe as a reply takes it."""
    await chats.api.push_text(GROUP, "/mode command", user_id=ADMIN)
    [done] = await chats.said(GROUP, 1)
    assert done.text == ENGLISH.mode_set[ChatMode.COMMAND]
    ignored = await chats.voice(GROUP, user_id=MEMBER)
    await chats.api.push_text(GROUP, "/transcribe", user_id=MEMBER, reply_to=ignored)
    status = await chats.transcript(GROUP)
    assert (status.history[0], status.reply_to) == (ACCEPTED_TEXT, ignored)
    assert len(chats.api.sent_to(GROUP)) == 2  # the mode's answer and the status message
    assert len(await chats.jobs()) == 1


async def test_in_command_mode_a_recording_mentioning_the_bot_is_transcribed(
    chats: Chats,
) -> None:
    """A voice note whose caption mentions @the_bot is taken without /transcribe."""
    await chats.chats.set_chat_mode(GROUP, ChatMode.COMMAND)
    await chats.voice(GROUP, user_id=MEMBER)  # not addressed: nothing
    mentioned = await chats.voice(GROUP, user_id=MEMBER, caption="@test_bot what is said here?")
    status = await chats.transcript(GROUP)
    assert status.reply_to == mentioned
    assert chats.api.sent_to(GROUP) == [status]
    assert len(await chats.jobs()) == 1


async def test_in_command_mode_a_reply_mentioning_the_bot_transcribes_that_recording(
    chats: Chats,
) -> None:
    """``@test_bot`` or ``/transcribe@test_bot`` answering a voice note takes it; others not."""
    await chats.chats.set_chat_mode(GROUP, ChatMode.COMMAND)
    first = await chats.voice(GROUP, user_id=MEMBER)
    for elsewhere in ("@other_bot what is said?", "@test_bot2 hi", "/transcribe@other_bot"):
        await chats.api.push_text(GROUP, elsewhere, user_id=MEMBER, reply_to=first)
    await chats.api.push_text(GROUP, "what is said, @Test_Bot?", user_id=MEMBER, reply_to=first)
    status = await chats.transcript(GROUP)
    assert status.reply_to == first
    assert chats.api.sent_to(GROUP) == [status]
    [job] = await chats.jobs()
    assert job.title is not None
    assert job.title.startswith("Voice note of ")
    second = await chats.voice(GROUP, b"other voice bytes", user_id=MEMBER)
    await chats.api.push_text(GROUP, "/transcribe@test_bot", user_id=MEMBER, reply_to=second)
    await chats.api.wait_sent(GROUP, 2)
    assert chats.api.sent_to(GROUP)[1].reply_to == second
    assert len(await chats.jobs()) == 2


async def test_transcribe_without_a_recording_says_how(chats: Chats) -> None:
    """/transcribe that answers no recording gets its usage, and makes no job."""
    text = await chats.api.push_text(GROUP, "just words", user_id=MEMBER)
    await chats.api.push_text(GROUP, "/transcribe", user_id=MEMBER, reply_to=text)
    [usage] = await chats.said(GROUP, 1)
    assert usage.text == ENGLISH.transcribe_usage
    assert await chats.jobs() == []


async def test_admin_answers_are_remembered_briefly(chats: Chats) -> None:
    """Two settings changes by one admin ask getChatMember once."""
    await chats.api.push_text(GROUP, "/mode command", user_id=ADMIN)
    await chats.api.push_text(GROUP, "/language ru", user_id=ADMIN)
    await chats.said(GROUP, 2)
    assert chats.api.calls.count("getchatmember") == 1
    assert await chats.chats.chat_settings(GROUP) == ChatSettings(
        chat_id=GROUP, language="ru", mode=ChatMode.COMMAND
    )


async def test_mode_in_a_private_chat_is_explained(chats: Chats) -> None:
    """/mode in a private chat says it is for groups and keeps nothing."""
    await chats.api.push_text(PRIVATE, "/mode command")
    [reply] = await chats.said(PRIVATE, 1)
    assert reply.text == ENGLISH.mode_private
    assert chats.chats.saves == []


async def test_no_group_title_or_sender_name_reaches_the_logs(
    chats: Chats, caplog: pytest.LogCaptureFixture
) -> None:
    """Group talk, commands and recordings log no title, name or login."""
    caplog.set_level(logging.DEBUG)
    await chats.api.push_text(GROUP, "/mode command", user_id=ADMIN)
    recording = await chats.voice(GROUP, user_id=MEMBER)
    await chats.api.push_text(GROUP, "/transcribe", user_id=MEMBER, reply_to=recording)
    await chats.transcript(GROUP)
    logged = "\n".join(f"{record.getMessage()} {record.__dict__}" for record in caplog.records)
    assert "bot.settings_changed" in logged
    for secret in (GROUP_TITLE, SENDER_FIRST_NAME, SENDER_USERNAME):
        assert secret not in logged


def _long_text() -> str:
    """About 30,000 characters of speech in sentences: eight messages' worth."""
    sentence = "Это длинная расшифровка записи, и она идёт дальше. "
    return (sentence * 600)[:30_000].strip()


async def test_a_long_transcript_is_one_dated_document_with_srt_and_vtt_behind_its_buttons(
    chats: Chats,
) -> None:
    """30,000 characters: one .txt named by date and id, its opening as the caption, buttons."""
    text = _long_text()
    chats.world.recognizer.text = text
    chats.world.converter.duration = 1800.0  # spoken over half an hour: real cue lengths
    recording = await chats.voice(PRIVATE, b"v" * 200_000)
    _, document = await chats.said(PRIVATE, 2)
    [job] = await chats.jobs()
    assert job.error is None, job.error
    assert document.method == "senddocument"
    assert document.filename == f"transcript-{job.created:%Y-%m-%d}-{job.id[:8]}.txt"
    assert document.reply_to == recording
    assert document.body == text
    assert document.text is not None
    assert text.startswith(document.text.removesuffix("…"))
    assert 0 < len(document.text) <= 301
    [[srt_button, vtt_button]] = document.buttons
    assert (srt_button[0], vtt_button[0]) == ("SRT", "VTT")
    srt_query = await chats.api.press(document, srt_button[1])
    assert await chats.api.wait_answered(srt_query) is None
    srt_file = (await chats.said(PRIVATE, 3))[2]
    assert srt_file.filename == f"transcript-{job.created:%Y-%m-%d}-{job.id[:8]}.srt"
    assert srt_file.reply_to == document.message_id
    cues = parsed_srt(srt_file.body, timed=bool(job.words))
    assert " ".join(" ".join(lines) for _, _, lines in cues).split() == text.split()
    vtt_query = await chats.api.press(document, vtt_button[1])
    await chats.api.wait_answered(vtt_query)
    vtt_file = (await chats.said(PRIVATE, 4))[3]
    assert vtt_file.body.startswith("WEBVTT")
    assert parsed_vtt(vtt_file.body, timed=bool(job.words))


async def test_buttons_work_on_another_process_after_a_restart(chats: Chats) -> None:
    """A button under a short transcript is answered by a new poller: the job is in the DB."""
    await chats.voice(PRIVATE)
    transcript = await chats.transcript(PRIVATE)
    [[_, (_, vtt_data)]] = transcript.buttons
    await chats.polling.stop(1)
    bot = make_bot(TOKEN, chats.api.url)
    successor = BotPolling(bot, make_dispatcher(chats.services, chats=chats.chats))
    await successor.start()
    try:
        query = await chats.api.press(transcript, vtt_data)
        assert await chats.api.wait_answered(query) is None
        vtt_file = (await chats.said(PRIVATE, 2))[1]
    finally:
        await successor.stop(1)
        await close_bot(bot)
    assert vtt_file.body.startswith("WEBVTT")
    assert TRANSCRIPT.split(maxsplit=1)[0] in vtt_file.body


async def test_a_button_for_another_chats_job_sends_nothing(chats: Chats) -> None:
    """Button data naming a job of another chat (or none) is answered "gone", no file sent."""
    await chats.voice(PRIVATE)
    transcript = await chats.transcript(PRIVATE)
    [[(_, srt_data), _]] = transcript.buttons
    elsewhere = attrs.evolve(transcript, chat_id=PRIVATE + 1)
    query = await chats.api.press(elsewhere, srt_data)
    assert await chats.api.wait_answered(query) == ENGLISH.transcript_gone
    unknown = await chats.api.press(transcript, "tx:srt:no-such-job")
    assert await chats.api.wait_answered(unknown) == ENGLISH.transcript_gone
    assert chats.api.sent_to(PRIVATE + 1) == []
    assert len(chats.api.sent_to(PRIVATE)) == 1


async def test_an_unanswered_admin_check_refuses_the_change(chats: Chats) -> None:
    """getChatMember failing (Telegram 500): the change is refused, never allowed by default."""
    chats.api.fail_next("getChatMember", 500, "Internal Server Error")
    await chats.api.push_text(GROUP, "/mode command", user_id=ADMIN)
    [refused] = await chats.said(GROUP, 1)
    assert refused.text == ENGLISH.not_admin
    assert chats.chats.saves == []


async def test_an_anonymous_admin_posting_as_the_group_may_change_it(chats: Chats) -> None:
    """A message sent as the group itself (an anonymous administrator) changes its mode."""
    anonymous = {"id": GROUP, "type": "supergroup", "title": GROUP_TITLE}
    await chats.api.push_text(GROUP, "/mode command", user_id=1087968824, sender_chat=anonymous)
    [done] = await chats.said(GROUP, 1)
    assert done.text == ENGLISH.mode_set[ChatMode.COMMAND]
    assert "getchatmember" not in chats.api.calls
