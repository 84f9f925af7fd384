"""The Telegram bot end to end: aiogram polling a fake Bot API over HTTP, workers on memory."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import tempfile
from collections.abc import AsyncIterator, Awaitable, Callable, Collection
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import attrs
import pytest
from aiogram import Bot
from aiogram.types import Message

from tests.support.fake_bot_api import (
    SENDER_FIRST_NAME,
    SENDER_LAST_NAME,
    SENDER_USERNAME,
    TOKEN,
    FakeBotApi,
    Sent,
    close_bot,
)
from tests.support.gates import GatedConverter
from tests.support.world import TEST_SETTINGS, World, make_world
from transcriber_adapters.localdisk import STAGING_PREFIX
from transcriber_adapters.memory import ManualClock, MemoryPeopleStore, MemoryUsageStore
from transcriber_adapters.telegram import (
    CLOUD_DOWNLOAD_LIMIT,
    LOCAL_DOWNLOAD_LIMIT,
    TelegramNotifier,
    TokenRejected,
    make_bot,
    recording_of,
)
from transcriber_adapters.telegram.notifier import ACCEPTED_TEXT
from transcriber_app.bot import BotPolling, make_dispatcher
from transcriber_app.bot.polling import Offsets
from transcriber_app.bot.texts import (
    DOWNLOAD_FAILED_TEXT,
    DUPLICATE_IN_PROGRESS_TEXT,
    DUPLICATE_TEXTS,
    ENGLISH,
    HELP_TEXT,
    REFUSED_TEXT,
    RUSSIAN,
    UNAVAILABLE_TEXT,
    duplicate_text,
)
from transcriber_core.entities import Job, Origin, State
from transcriber_core.errors import ConverterUnavailable, StorageDown, UnreadableMedia
from transcriber_core.people import (
    LINK_CODE_LIFETIME,
    Person,
    link_code_hash,
    person_owner,
)
from transcriber_core.policy import Settings
from transcriber_core.ports import ChatLinks
from transcriber_core.services import Services
from transcriber_core.usage import Charge, telegram_payer
from transcriber_core.worker import Workers

CHAT = 4242
NOW = datetime(2026, 3, 1, tzinfo=UTC)
TRANSCRIPT = "the quick brown fox jumps over the lazy dog"
#: A file name the sender chose; only its extension may reach storage or logs.
SECRET_FILE_NAME = "Секретный документ клиента.mp3"


@attrs.define
class Running:
    """A bot polling the fake server, with workers carrying its jobs through the memory world."""

    api: FakeBotApi
    world: World
    services: Services
    bot: Bot
    polling: BotPolling
    #: The test's own system temp dir, where staging files go.
    temp_dir: Path

    def staging_files(self) -> list[str]:
        """Staging files in the temp dir right now."""
        return [path.name for path in self.temp_dir.glob(f"{STAGING_PREFIX}*")]

    async def jobs(self) -> list[Job]:
        """Every job, newest first."""
        return await self.world.repo.list_jobs()

    async def send(self, kind: str, data: bytes = b"fake recording bytes", **options: Any) -> int:
        """Push a message with a new file of ``kind``; its message id."""
        file = self.api.add_file(data, declared_size=options.pop("declared_size", None))
        return await self.api.push_media(CHAT, kind, file, **options)


Start = Callable[..., Awaitable[Running]]


@pytest.fixture
def temp_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A system temp dir of the test's own, so what staging leaves there is seen exactly."""
    folder = tmp_path / "system-temp"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    return folder


@pytest.fixture
async def start(tmp_path: Path, temp_dir: Path) -> AsyncIterator[Start]:
    """Start a fake Bot API server, the bot and the workers; everything stops after the test."""
    async with contextlib.AsyncExitStack() as stack:

        async def starter(
            *,
            settings: Settings = TEST_SETTINGS,
            local: bool = False,
            files_dir: Path | None = None,
            max_file_bytes: int = CLOUD_DOWNLOAD_LIMIT,
            allowed_chat_ids: Collection[int] = (),
            gated: bool = False,
            short_of_space: bool = False,
            quota: int | None = None,
            links: ChatLinks | None = None,
        ) -> Running:
            api = await stack.enter_async_context(FakeBotApi(local=local, files_dir=files_dir))
            world = make_world(tmp_path, settings=settings)
            world.recognizer.text = TRANSCRIPT
            bot = make_bot(TOKEN, api.url)
            stack.push_async_callback(close_bot, bot)
            services = attrs.evolve(world.services, notifier=TelegramNotifier(bot))
            if gated:
                services = attrs.evolve(services, converter=GatedConverter(world.converter))
            if quota is not None:
                services = attrs.evolve(
                    services,
                    usage=MemoryUsageStore(world.clock),
                    settings=attrs.evolve(services.settings, seconds_per_day=quota),
                )
            workers = Workers(services)
            workers.start()
            stack.push_async_callback(workers.drain, 1)
            dispatcher = make_dispatcher(
                services,
                max_file_bytes=max_file_bytes,
                allowed_chat_ids=allowed_chat_ids,
                short_of_space=lambda: short_of_space,
                links=links,
            )
            polling = BotPolling(bot, dispatcher, polling_timeout=10)
            await polling.start()
            stack.push_async_callback(polling.stop, 1)
            return Running(
                api=api,
                world=world,
                services=services,
                bot=bot,
                polling=polling,
                temp_dir=temp_dir,
            )

        yield starter


@pytest.mark.parametrize(
    ("kind", "file_name", "mime_type", "extension"),
    [
        ("voice", None, "audio/ogg", ".ogg"),
        ("audio", "Секретная песня.MP3", "audio/mpeg", ".mp3"),
        ("video", None, "video/mp4", ".mp4"),
        ("video_note", None, None, ".mp4"),
        ("document", SECRET_FILE_NAME, "audio/mpeg", ".mp3"),
        ("document", None, "video/quicktime", ".mov"),
    ],
)
async def test_each_media_kind_is_acknowledged_then_transcribed(
    start: Start, kind: str, file_name: str | None, mime_type: str | None, extension: str
) -> None:
    """Every recording kind gets an immediate reply, then the transcript replying to it."""
    running = await start()
    data = f"{kind} bytes".encode()
    message_id = await running.send(kind, data, file_name=file_name, mime_type=mime_type)
    # One status message: the acknowledgement, edited as the job moves into the transcript.
    status = await running.api.wait_shown(CHAT, TRANSCRIPT)
    assert (status.history[0], status.reply_to) == (ACCEPTED_TEXT, message_id)
    assert running.api.sent_to(CHAT) == [status]
    [job] = await running.jobs()
    assert job.state is State.DONE
    assert job.origin == Origin.telegram(CHAT, message_id)
    assert job.source_file_id is not None
    record = await running.world.repo.get_file(job.source_file_id)
    assert record.extension == extension
    assert running.world.files.content(record) == data
    assert running.staging_files() == []


async def test_long_transcript_arrives_as_a_text_document(start: Start) -> None:
    """A transcript longer than three messages is one .txt document replying to the recording."""
    running = await start()
    long_text = "Длинная расшифровка записи. " * 600  # about 16,800 characters
    running.world.recognizer.text = long_text
    message_id = await running.send("voice")
    _, document = await running.api.wait_sent(CHAT, 2)
    assert document.method == "senddocument"
    [job] = await running.jobs()
    assert document.filename == f"transcript-{job.created:%Y-%m-%d}-{job.id[:8]}.txt"
    assert document.reply_to == message_id
    assert document.body == long_text


async def test_failed_job_is_told_with_its_reason(start: Start) -> None:
    """A recording the converter cannot read gets a clear failure notice, not silence."""
    running = await start()
    running.world.converter.fail_next(UnreadableMedia("the recording has no audio stream"))
    message_id = await running.send("audio", mime_type="audio/mpeg")
    notice = await running.api.wait_shown_where(CHAT, lambda sent: "could not" in sent.body.lower())
    assert notice.reply_to == message_id
    assert "could not transcribe" in notice.body.lower()
    assert "no audio stream" in notice.body


async def test_dead_job_is_told(start: Start) -> None:
    """A job retried past its attempts gets a notice that the bot gave up."""
    running = await start(settings=Settings(max_attempts=1, retry_base=timedelta(0)))
    running.world.converter.fail_next(ConverterUnavailable())
    message_id = await running.send("voice")
    notice = await running.api.wait_shown_where(CHAT, lambda sent: "gave up" in sent.body)
    assert notice.reply_to == message_id
    [job] = await running.jobs()
    assert job.state is State.DEAD


async def test_same_file_twice_in_a_chat_makes_one_job(start: Start) -> None:
    """A repeated file_unique_id in one chat is answered by the first job, in progress or done."""
    running = await start(gated=True)
    file = running.api.add_file(b"one recording")
    first = await running.api.push_media(CHAT, "voice", file)
    await running.api.wait_sent(CHAT, 1)
    second = await running.api.push_media(CHAT, "voice", file)
    _, in_progress = await running.api.wait_sent(CHAT, 2)
    assert (in_progress.text, in_progress.reply_to) == (DUPLICATE_IN_PROGRESS_TEXT, second)
    converter = running.services.converter
    assert isinstance(converter, GatedConverter)
    converter.release.set()
    transcript = await running.api.wait_shown(CHAT, TRANSCRIPT)
    assert transcript.reply_to == first
    await running.api.push_media(CHAT, "voice", file)
    *_, after_done = await running.api.wait_sent(CHAT, 3)
    assert after_done.text == DUPLICATE_TEXTS[State.DONE]
    assert len(await running.jobs()) == 1
    assert len(running.world.files.names()) == 2  # the recording and its converted audio
    assert running.api.calls.count("getfile") == 1  # the copies were never downloaded


async def test_an_outage_at_intake_is_waited_out_not_told(
    start: Start, monkeypatch: pytest.MonkeyPatch
) -> None:
    """S3 down twice as a voice message arrives: the bot tries again and accepts it, no apology."""
    running = await start()
    files = running.services.files
    real_put = files.put
    outages = iter([StorageDown(), StorageDown()])

    async def put_after_outages(*args: Any, **kwargs: Any) -> Any:
        for outage in outages:
            raise outage
        return await real_put(*args, **kwargs)

    monkeypatch.setattr(files, "put", put_after_outages)
    message_id = await running.send("voice", b"voice bytes")
    status = await running.api.wait_shown(CHAT, TRANSCRIPT)
    assert (status.history[0], status.reply_to) == (ACCEPTED_TEXT, message_id)
    assert UNAVAILABLE_TEXT not in [text for sent in running.api.sent for text in sent.history]
    assert running.api.sent_to(CHAT) == [status]
    assert len(await running.jobs()) == 1
    assert running.staging_files() == []


async def test_same_file_in_another_chat_is_its_own_job(start: Start) -> None:
    """Deduplication is per chat: another chat sending the same file gets its own transcript."""
    running = await start()
    file = running.api.add_file(b"shared recording")
    await running.api.push_media(CHAT, "voice", file)
    await running.api.push_media(CHAT + 1, "voice", file)
    await running.api.wait_shown(CHAT, TRANSCRIPT)
    await running.api.wait_shown(CHAT + 1, TRANSCRIPT)
    assert len(await running.jobs()) == 2


async def test_file_over_twenty_megabytes_is_refused_before_download(start: Start) -> None:
    """On the cloud Bot API a file over 20 MB gets a clear reply, no download and no job."""
    running = await start()
    message_id = await running.send("video", declared_size=CLOUD_DOWNLOAD_LIMIT + 1)
    [reply] = await running.api.wait_sent(CHAT, 1)
    assert reply.reply_to == message_id
    assert "too large" in reply.body
    assert "20 MB" in reply.body
    assert "getfile" not in running.api.calls
    assert await running.jobs() == []


async def test_recording_is_refused_while_the_disk_is_short_of_space(start: Start) -> None:
    """Below [storage] min_free_bytes the bot says so, downloads nothing and makes no job."""
    running = await start(short_of_space=True)
    message_id = await running.send("voice")
    [reply] = await running.api.wait_sent(CHAT, 1)
    assert reply.reply_to == message_id
    assert "short of disk space" in reply.body
    assert "getfile" not in running.api.calls
    assert await running.jobs() == []


async def test_file_too_big_for_get_file_is_refused(start: Start) -> None:
    """A message that states no size is refused when the Bot API says the file is too big."""
    running = await start()
    await running.send("document", mime_type="video/mp4", declared_size=25_000_000, sized=False)
    [reply] = await running.api.wait_sent(CHAT, 1)
    assert "too large" in reply.body
    assert await running.jobs() == []


async def test_local_bot_api_server_takes_files_over_twenty_megabytes(start: Start) -> None:
    """Through a local Bot API server (api_base) a 300 MB file is accepted and transcribed."""
    running = await start(local=True, max_file_bytes=LOCAL_DOWNLOAD_LIMIT)
    await running.send("video", b"big video, small here", declared_size=300 * 1024 * 1024)
    await running.api.wait_shown(CHAT, TRANSCRIPT)


async def test_local_server_absolute_path_is_read_from_disk(start: Start, tmp_path: Path) -> None:
    """A local server in --local mode answers an absolute path; the bot copies the file from it."""
    served = tmp_path / "bot-api-files"
    served.mkdir()
    running = await start(local=True, files_dir=served, max_file_bytes=LOCAL_DOWNLOAD_LIMIT)
    await running.send("voice", b"bytes on the shared disk")
    await running.api.wait_shown(CHAT, TRANSCRIPT)
    [job] = await running.jobs()
    assert job.source_file_id is not None
    record = await running.world.repo.get_file(job.source_file_id)
    assert running.world.files.content(record) == b"bytes on the shared disk"
    assert not any(call.startswith("file") for call in running.api.calls)
    assert [path.name for path in served.iterdir()] != []  # the server's own file is left alone


@pytest.mark.parametrize("text", ["/start", "hello there"])
async def test_start_and_text_get_the_help_text(start: Start, text: str) -> None:
    """/start and any text that is not a recording are answered with the help text."""
    running = await start()
    message_id = await running.api.push_text(CHAT, text)
    [reply] = await running.api.wait_sent(CHAT, 1)
    assert (reply.text, reply.reply_to) == (HELP_TEXT, message_id)


async def test_document_that_is_not_media_gets_the_help_text(start: Start) -> None:
    """A PDF is not a recording: help text, no download, no job."""
    running = await start()
    await running.send("document", file_name="report.pdf", mime_type="application/pdf")
    [reply] = await running.api.wait_sent(CHAT, 1)
    assert reply.text == HELP_TEXT
    assert "getfile" not in running.api.calls
    assert await running.jobs() == []


async def test_chat_not_allowed_is_refused_politely(start: Start) -> None:
    """With allowed_chat_ids set, another chat's recording and text get a refusal and no job."""
    running = await start(allowed_chat_ids=[CHAT + 1])
    await running.send("voice")
    await running.api.push_text(CHAT, "/start")
    replies = await running.api.wait_sent(CHAT, 2)
    assert [reply.text for reply in replies] == [REFUSED_TEXT, REFUSED_TEXT]
    assert "getfile" not in running.api.calls
    assert await running.jobs() == []


async def test_allowed_chat_is_served(start: Start) -> None:
    """A chat in allowed_chat_ids gets its transcript."""
    running = await start(allowed_chat_ids=[CHAT])
    await running.send("voice")
    await running.api.wait_shown(CHAT, TRANSCRIPT)


async def test_download_error_is_told_and_leaves_no_file(start: Start) -> None:
    """When Telegram fails to hand over the file the sender is told; no job, no temp file."""
    running = await start()
    running.api.fail_next("getFile", 500, "Internal Server Error")
    await running.send("voice")
    [reply] = await running.api.wait_sent(CHAT, 1)
    assert reply.text == DOWNLOAD_FAILED_TEXT
    assert await running.jobs() == []
    assert running.staging_files() == []


async def test_stalled_download_is_abandoned_after_the_inactivity_timeout(
    start: Start, temp_dir: Path
) -> None:
    """A download that stops sending bytes is aborted: the sender is told, nothing is left."""
    running = await start(settings=Settings(upload_inactivity_timeout=timedelta(milliseconds=200)))
    running.api.hold_downloads = asyncio.Event()
    await running.send("voice", b"x" * 100_000)
    [reply] = await running.api.wait_sent(CHAT, 1)
    assert reply.text == DOWNLOAD_FAILED_TEXT
    assert await running.jobs() == []
    assert running.staging_files() == []
    running.api.hold_downloads.set()


async def test_stop_cancels_a_download_after_the_grace_and_leaves_nothing(
    start: Start, temp_dir: Path
) -> None:
    """Stopping mid-download waits the grace, cancels, leaves nothing, confirms nothing."""
    running = await start()
    running.api.hold_downloads = asyncio.Event()
    await running.send("voice", b"y" * 100_000)
    async with asyncio.timeout(5):
        await running.api.download_started.wait()
    async with asyncio.timeout(5):
        await running.polling.stop(grace=0.05)
    assert await running.jobs() == []
    assert running.staging_files() == []
    assert running.api.sent == []
    assert len(running.api.pending_updates()) == 1  # Telegram still holds it
    running.api.hold_downloads.set()


async def test_an_update_cut_off_mid_intake_is_taken_by_the_next_poller(start: Start) -> None:
    """A poller dies mid-download: its update stays unconfirmed, the next one makes one job."""
    running = await start()
    running.api.hold_downloads = asyncio.Event()
    message_id = await running.send("voice", b"z" * 100_000)
    async with asyncio.timeout(5):
        await running.api.download_started.wait()
    # A poller that dies: its tasks end without a word to Telegram, as under SIGKILL.
    await running.polling.stop(grace=0)
    running.api.hold_downloads = None
    successor = BotPolling(running.bot, running.polling.dispatcher, polling_timeout=10)
    await successor.start()
    try:
        status = await running.api.wait_shown(CHAT, TRANSCRIPT)
    finally:
        await successor.stop(1)
    assert (status.history[0], status.reply_to) == (ACCEPTED_TEXT, message_id)
    assert running.api.sent_to(CHAT) == [status]
    assert len(await running.jobs()) == 1
    assert running.api.pending_updates() == []


async def test_an_update_delivered_again_after_its_job_is_told_nothing(start: Start) -> None:
    """The same update twice (a restart before its offset was sent): one job, no second word."""
    running = await start()
    message_id = await running.send("voice")
    await running.api.wait_shown(CHAT, TRANSCRIPT)
    await running.api.redeliver(message_id)
    await running.api.push_text(CHAT, "/help")  # answered after the redelivered update
    *_, help_reply = await running.api.wait_sent(CHAT, 2)
    assert help_reply.text == HELP_TEXT
    assert len(await running.jobs()) == 1
    assert len(running.api.sent) == 2


async def test_offset_waits_for_the_oldest_update_still_downloading(start: Start) -> None:
    """A later update is handled while an earlier one downloads; neither is confirmed before it."""
    running = await start()
    running.polling.busy_pause = 0.01
    running.api.hold_downloads = asyncio.Event()
    slow = await running.send("voice", b"s" * 100_000)
    async with asyncio.timeout(5):
        await running.api.download_started.wait()
    await running.api.push_text(CHAT, "/help")
    [help_reply] = await running.api.wait_sent(CHAT, 1)
    assert help_reply.text == HELP_TEXT
    assert len(running.api.pending_updates()) == 2  # the download holds the offset back
    running.api.hold_downloads.set()
    transcript = await running.api.wait_shown(CHAT, TRANSCRIPT)
    assert transcript.reply_to == slow
    assert len(await running.jobs()) == 1


def test_offsets_pass_only_finished_updates() -> None:
    """The offset stops at the oldest unfinished update and passes it once it finishes."""
    offsets = Offsets()
    assert offsets.offset() is None
    for update_id in (5, 7, 9):
        offsets.take(update_id)
    offsets.finish(7)
    offsets.finish(9)
    assert offsets.offset() == 5
    assert offsets.known(9)
    assert not offsets.known(10)
    offsets.finish(5)
    assert offsets.offset() == 10
    assert offsets.known(4)


async def test_sigterm_is_left_to_the_service(start: Start) -> None:
    """aiogram installs no signal handler: SIGTERM reaches the service's and polling goes on."""
    loop = asyncio.get_running_loop()
    received = asyncio.Event()
    loop.add_signal_handler(signal.SIGTERM, received.set)
    try:
        running = await start()
        await running.api.push_text(CHAT, "/start")
        await running.api.wait_sent(CHAT, 1)
        os.kill(os.getpid(), signal.SIGTERM)
        async with asyncio.timeout(5):
            await received.wait()
        await running.api.push_text(CHAT, "still there?")
        replies: list[Sent] = await running.api.wait_sent(CHAT, 2)
        assert replies[1].text == HELP_TEXT
    finally:
        loop.remove_signal_handler(signal.SIGTERM)


async def test_sender_and_file_names_never_reach_the_logs(
    start: Start, caplog: pytest.LogCaptureFixture
) -> None:
    """Every log line, ours and aiogram's, at DEBUG, is free of the sender's and file's names."""
    caplog.set_level(logging.DEBUG)
    # configure_logging (run by earlier tests) quiets aiogram.event, its one per-update line.
    caplog.set_level(logging.DEBUG, logger="aiogram.event")
    running = await start(allowed_chat_ids=[CHAT])
    await running.send("document", file_name=SECRET_FILE_NAME, mime_type="audio/mpeg")
    await running.api.wait_shown(CHAT, TRANSCRIPT)
    running.world.converter.fail_next(UnreadableMedia())
    await running.send("audio", file_name=SECRET_FILE_NAME, declared_size=CLOUD_DOWNLOAD_LIMIT + 1)
    await running.send("audio", file_name=SECRET_FILE_NAME)
    await running.api.push_text(CHAT, "/start")
    await running.api.push(CHAT + 1, text="from a stranger")
    # The transcript, the refusal, the failure (its status message edited), the help.
    await running.api.wait_sent(CHAT, 4)
    await running.api.wait_shown_where(CHAT, lambda sent: "could not" in sent.body.lower())
    await running.api.wait_sent(CHAT + 1, 1)
    await running.polling.stop(grace=1)
    logged = "\n".join(f"{record.getMessage()} {record.__dict__}" for record in caplog.records)
    assert "job.accepted" in logged
    assert "bot.recording" in logged
    assert any(record.name.startswith("aiogram") for record in caplog.records)
    for secret in (SENDER_FIRST_NAME, SENDER_LAST_NAME, SENDER_USERNAME, "Секретный документ"):
        assert secret not in logged
    assert all(SECRET_FILE_NAME not in name for name in running.world.files.names())


def message(**content: Any) -> Message:
    """A private-chat message with ``content``, as aiogram parses it."""
    chat = {"id": CHAT, "type": "private"}
    return Message.model_validate({"message_id": 1, "date": 0, "chat": chat, **content})


def test_unclean_file_name_falls_back_to_the_mime_type() -> None:
    """A name whose extension is not plain ASCII gives way to the MIME type's extension."""
    media = {
        "file_id": "f",
        "file_unique_id": "u",
        "file_name": "песня.мп3",
        "mime_type": "audio/mpeg",
    }
    recording = recording_of(message(document=media))
    assert recording is not None
    assert recording.extension == ".mp3"


def test_unknown_type_without_a_name_has_no_extension() -> None:
    """An audio document with neither a clean name nor a known type is stored without extension."""
    media = {"file_id": "f", "file_unique_id": "u", "mime_type": "audio/x-unknown"}
    recording = recording_of(message(document=media))
    assert recording is not None
    assert recording.extension == ""


def test_failed_duplicate_repeats_the_reason() -> None:
    """A copy of a recording that failed is told why the first one failed."""
    job = Job(
        id="j",
        state=State.FAILED,
        origin=Origin.telegram(CHAT, 1),
        error="the recording has no audio stream",
        created=NOW,
        updated=NOW,
    )
    assert "no audio stream" in duplicate_text(job)


def test_animation_is_not_a_recording() -> None:
    """A GIF (an animation that is also a video/mp4 document) is not taken as a recording."""
    gif = {"file_id": "f", "file_unique_id": "u", "mime_type": "video/mp4", "file_name": "a.mp4"}
    animation = {**gif, "width": 1, "height": 1, "duration": 1}
    assert recording_of(message(document=gif, animation=animation)) is None


async def test_a_rejected_token_stops_the_start(tmp_path: Path) -> None:
    """A token Telegram answers 401 to makes ``start`` raise TokenRejected and poll nothing."""
    async with FakeBotApi() as api:
        bot = make_bot("987654321:not-the-token-the-fake-api-knows", api.url)
        try:
            polling = BotPolling(bot, make_dispatcher(make_world(tmp_path).services))
            with pytest.raises(TokenRejected):
                await polling.start()
            await polling.stop(0)
            # The fake records only calls made with its token: none got through, none polled.
            assert api.calls == []
        finally:
            await close_bot(bot)


async def test_telegram_unreachable_at_start_is_tried_again_until_polling_begins(
    tmp_path: Path,
) -> None:
    """getMe failing at start lets the service start; the bot polls once Telegram answers."""
    async with FakeBotApi() as api:
        for _ in range(3):
            api.fail_next("getMe", 502, "Bad Gateway")
        bot = make_bot(TOKEN, api.url)
        dispatcher = make_dispatcher(make_world(tmp_path).services)
        polling = BotPolling(bot, dispatcher, polling_timeout=10, retry_delay=0.01)
        try:
            await polling.start()
            message_id = await api.push_text(CHAT, "anyone there?")
            [reply] = await api.wait_sent(CHAT, 1)
            assert (reply.text, reply.reply_to) == (HELP_TEXT, message_id)
            assert api.calls[:4] == ["getme"] * 4
        finally:
            await polling.stop(0)
            await close_bot(bot)


async def test_a_spent_day_is_told_with_its_reset_before_any_download(start: Start) -> None:
    """A sender whose day is spent is told when it resets (UTC); nothing is downloaded or stored."""
    running = await start(quota=60)
    usage = running.services.usage
    assert usage is not None
    running.world.clock.set(datetime(2026, 3, 1, 23, 0, tzinfo=UTC))
    await usage.charge(Charge(job_id="earlier", payer=telegram_payer(CHAT), seconds=60), limit=0)
    message_id = await running.send("voice")
    [reply] = await running.api.wait_sent(CHAT, 1)
    assert reply.reply_to == message_id
    assert "used up" in reply.body
    assert "2026-03-02 00:00 UTC" in reply.body
    assert await running.jobs() == []
    assert "getfile" not in running.api.calls
    # From midnight UTC the day is whole again; the job counts its measured seconds once.
    running.world.clock.set(datetime(2026, 3, 2, tzinfo=UTC))
    await running.send("voice")
    await running.api.wait_shown(CHAT, TRANSCRIPT)
    [job] = await running.jobs()
    assert job.duration
    used = (await usage.usage([telegram_payer(CHAT)]))[telegram_payer(CHAT)]
    assert (used.today, used.month) == (job.duration, 60 + job.duration)


async def test_a_group_members_recording_counts_against_the_member(start: Start) -> None:
    """In a group each member pays for their own recordings, in their own language."""
    running = await start(quota=60)
    usage = running.services.usage
    assert usage is not None
    await usage.charge(Charge(job_id="spent", payer=telegram_payer(7), seconds=60), limit=0)
    file = running.api.add_file(b"a member's voice")
    group = -100123
    await running.api.push_media(group, "voice", file, user_id=7, language_code="ru")
    [reply] = await running.api.wait_sent(group, 1)
    assert "исчерпано" in reply.body
    other = running.api.add_file(b"another member's voice")
    await running.api.push_media(group, "voice", other, user_id=8)
    await running.api.wait_shown(group, TRANSCRIPT)


async def _linkable(clock: Any) -> tuple[MemoryPeopleStore, Person]:
    """A people store on ``clock`` with one active person, Alice, and her code ABCD-2345."""
    people = MemoryPeopleStore(clock)
    alice = Person(id="a" * 57, name="alice", created=NOW)
    await people.invite(alice, token_hash="invite", lifetime=timedelta(days=1))
    active = await people.accept_invite("invite", password_hash="hash")
    assert active is not None
    await people.make_link_code(
        alice.id, code_hash=link_code_hash("ABCD2345"), lifetime=LINK_CODE_LIFETIME
    )
    return people, active


async def test_link_makes_the_chats_recordings_the_persons(start: Start) -> None:
    """``/link CODE`` links the private chat: its next recording is Alice's and in her list."""
    people, alice = await _linkable(ManualClock(NOW))
    running = await start(links=people, quota=3600)
    await running.api.push_text(CHAT, "/link abcd-2345")
    [linked] = await running.api.wait_sent(CHAT, 1)
    assert linked.text == ENGLISH.link_done.format(name="alice")
    message_id = await running.send("voice")
    await running.api.wait_shown(CHAT, TRANSCRIPT)
    [job] = await running.jobs()
    assert job.owner == person_owner(alice.id)
    assert job.origin == Origin.telegram(CHAT, message_id)
    assert [j.id for j in await running.world.repo.list_owned_jobs(alice.owner_key)] == [job.id]
    # The person pays for the linked chat's recordings, not the Telegram user.
    usage = running.services.usage
    assert usage is not None
    found = await usage.usage([alice.owner_key, telegram_payer(CHAT)])
    assert found[alice.owner_key].today == job.duration
    assert found[telegram_payer(CHAT)].today == 0
    # /unlink: the next recording is nobody's again.
    await running.api.push_text(CHAT, "/unlink")
    *_, unlinked = await running.api.wait_sent(CHAT, 3)
    assert unlinked.text == ENGLISH.unlink_done
    second = await running.send("voice")
    await running.api.wait_sent(CHAT, 4)
    [newest] = [j for j in await running.jobs() if j.origin == Origin.telegram(CHAT, second)]
    assert newest.owner is None


@pytest.mark.parametrize("code", ["ABCD-2345", "ZZZZ-9999", "not a code", ""])
async def test_a_wrong_or_used_code_is_told_clearly(start: Start, code: str) -> None:
    """A used, unknown or malformed code gets a clear reply and links nothing."""
    people, _ = await _linkable(ManualClock(NOW))
    await people.use_link_code(link_code_hash("ABCD2345"), chat_id=999)
    running = await start(links=people)
    await running.api.push_text(CHAT, f"/link {code}".strip())
    [reply] = await running.api.wait_sent(CHAT, 1)
    expected = ENGLISH.link_refused if code in ("ABCD-2345", "ZZZZ-9999") else ENGLISH.link_usage
    assert reply.text == expected
    assert await people.person_for_chat(CHAT) is None


async def test_an_expired_code_is_refused_in_russian(start: Start) -> None:
    """A code past its ten minutes on the store's clock is refused, in the sender's language."""
    clock = ManualClock(NOW)
    people, _ = await _linkable(clock)
    clock.set(NOW + LINK_CODE_LIFETIME)
    running = await start(links=people)
    await running.api.push_text(CHAT, "/link ABCD2345", language_code="ru")
    [reply] = await running.api.wait_sent(CHAT, 1)
    assert reply.text == RUSSIAN.link_refused


async def test_a_group_cannot_be_linked(start: Start) -> None:
    """``/link`` in a group is refused (a group's recordings are its members'), code unused."""
    people, alice = await _linkable(ManualClock(NOW))
    running = await start(links=people)
    group = -100777
    await running.api.push_text(group, "/link ABCD-2345", user_id=55)
    [reply] = await running.api.wait_sent(group, 1)
    assert reply.text == ENGLISH.link_private_only
    assert await people.person_for_chat(group) is None
    assert await people.use_link_code(link_code_hash("ABCD2345"), chat_id=1) == alice


async def test_transcribe_in_a_group_is_paid_by_the_one_who_asks(start: Start) -> None:
    """``/transcribe`` on a member's recording counts against the asker, and says it is theirs."""
    running = await start(quota=60)
    usage = running.services.usage
    assert usage is not None
    group, admin = -100777, 1
    running.api.admins[group] = {admin}
    await running.api.push_text(group, "/mode command", user_id=admin)
    await running.api.wait_sent(group, 1)
    file = running.api.add_file(b"member seven's voice")
    recording = await running.api.push_media(group, "voice", file, user_id=7, first_name="Seven")
    # Eight's day is spent: Eight asking is refused by name; Seven's time is not touched.
    await usage.charge(Charge(job_id="spent", payer=telegram_payer(8), seconds=60), limit=0)
    asked = await running.api.push_text(
        group, "/transcribe", user_id=8, first_name="Eight", reply_to=recording
    )
    refused = (await running.api.wait_sent(group, 2))[1]
    assert refused.reply_to == asked
    assert refused.body.startswith("Eight: ")
    assert "used up" in refused.body
    assert await running.jobs() == []
    # Nine asks with a whole day: taken, and Nine pays for it, not Seven.
    await running.api.push_text(
        group, "/transcribe", user_id=9, first_name="Nine", reply_to=recording
    )
    await running.api.wait_shown(group, TRANSCRIPT)
    [job] = await running.jobs()
    assert job.duration
    found = await usage.usage([telegram_payer(7), telegram_payer(9)])
    assert found[telegram_payer(9)].today == job.duration
    assert found[telegram_payer(7)].today == 0


async def test_a_person_disabled_while_their_chats_file_downloads_gets_no_job(
    start: Start,
) -> None:
    """Disabled mid-download, the linked person neither owns nor pays: the chat is nobody's."""
    clock = ManualClock(NOW)
    people, alice = await _linkable(clock)
    await people.use_link_code(link_code_hash("ABCD2345"), chat_id=CHAT)
    running = await start(links=people, quota=3600)
    running.api.hold_downloads = asyncio.Event()
    await running.send("voice")
    await running.api.download_started.wait()
    await people.disable_person(alice.id, now=NOW)
    running.api.hold_downloads.set()
    await running.api.wait_shown(CHAT, TRANSCRIPT)
    [job] = await running.jobs()
    assert job.owner is None
    usage = running.services.usage
    assert usage is not None
    found = await usage.usage([alice.owner_key, telegram_payer(CHAT)])
    assert found[alice.owner_key].today == 0
    assert found[telegram_payer(CHAT)].today == job.duration
