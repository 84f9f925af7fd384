"""The Telegram bot: recordings in by long polling, inside the service's lifecycle (SPEC §7).

A recording (voice, audio, video, video note, or a document with an audio
or video type) is checked against the allowed chats and the download limit,
streamed to a staging file and submitted like an HTTP upload. The core's
``submit`` tells the notifier ``accepted``, so the immediate reply and the
transcript both come from ``TelegramNotifier``. Anything else gets the help
text. Log lines name the kind of file, its extension and size, never the
sender or the file name (SPEC §9).

For the lifecycle: ``make_bot`` (from the adapter) and ``make_dispatcher``
build the pieces, ``BotPolling`` runs them: ``start`` after the workers,
``stop(grace)`` with the other intakes, ``close`` after the workers drained
(the notifier sends through the same bot until then).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Collection
from typing import Any

import attrs
from aiogram import Bot, Dispatcher, Router
from aiogram.exceptions import TelegramUnauthorizedError
from aiogram.types import Message, TelegramObject

from transcriber_adapters.telegram import (
    CLOUD_DOWNLOAD_LIMIT,
    FileTooLarge,
    TelegramRefused,
    TelegramUnavailable,
    download_file,
    send_reply,
    telegram_errors,
)
from transcriber_core.entities import Job, Origin, State
from transcriber_core.errors import TranscriberError
from transcriber_core.intake import submit
from transcriber_core.naming import extension_of
from transcriber_core.services import Services

log = logging.getLogger("transcriber.bot")

#: How long a getMe may take before Telegram counts as unreachable for now.
_GET_ME_SECONDS = 10.0
#: How long an interrupted download may spend asking its sender to resend.
_LAST_WORD_SECONDS = 3.0

HELP_TEXT = (
    "Send me a voice message, an audio or video file, or a video note, "
    "and I will reply with its text."
)
REFUSED_TEXT = "Sorry, this bot is private and does not take recordings from this chat."
TOO_LARGE_TEXT = (
    "This file is too large: I can download files up to {limit}. "
    "Please send a shorter or smaller recording."
)
DOWNLOAD_FAILED_TEXT = "I could not download this file from Telegram. Please send it again."
UNAVAILABLE_TEXT = "I cannot take this recording right now. Please send it again in a few minutes."
#: The reply while the service is short of disk space (the HTTP intake's 507).
NO_ROOM_TEXT = (
    "I cannot take recordings right now: the service is short of disk space."
    " Please send it again later."
)
#: What a second copy of a recording is told, by the state of the first one's job.
DUPLICATE_TEXTS = {
    State.DONE: "I already transcribed this recording: see my reply to the first one.",
    State.FAILED: "I already tried this recording and could not transcribe it: {error}",
    State.DEAD: "I already tried this recording and gave up after repeated errors.",
}
DUPLICATE_IN_PROGRESS_TEXT = (
    "I already have this recording; its text will come as a reply to the first one."
)

#: Extensions by MIME type, for files whose name gives none (voice and video notes have no name).
_EXTENSIONS = {
    "audio/aac": ".aac",
    "audio/amr": ".amr",
    "audio/flac": ".flac",
    "audio/m4a": ".m4a",
    "audio/mp3": ".mp3",
    "audio/mp4": ".m4a",
    "audio/mpeg": ".mp3",
    "audio/ogg": ".ogg",
    "audio/opus": ".opus",
    "audio/wav": ".wav",
    "audio/wave": ".wav",
    "audio/webm": ".webm",
    "audio/x-flac": ".flac",
    "audio/x-m4a": ".m4a",
    "audio/x-wav": ".wav",
    "video/3gpp": ".3gp",
    "video/mp4": ".mp4",
    "video/mpeg": ".mpeg",
    "video/quicktime": ".mov",
    "video/webm": ".webm",
    "video/x-matroska": ".mkv",
    "video/x-msvideo": ".avi",
}
#: What a file of each kind is when neither its name nor its MIME type says.
_DEFAULT_EXTENSIONS = {"voice": ".ogg", "video_note": ".mp4", "video": ".mp4"}


@attrs.frozen(kw_only=True)
class Recording:
    """The file of a message that carries a recording; nothing of the sender's but the extension."""

    #: voice, audio, video, video_note or document.
    kind: str
    file_id: str
    #: The same for every copy of one file, across messages and bots.
    file_unique_id: str
    #: The size Telegram states, when it does.
    declared_size: int | None
    #: From the file name or the MIME type; "" when neither tells.
    extension: str


def recording_of(message: Message) -> Recording | None:
    """The recording in ``message``, or None when it carries none."""
    media: Any
    for kind in ("voice", "audio", "video", "video_note"):
        media = getattr(message, kind)
        if media is not None:
            break
    else:
        media = message.document
        kind = "document"
        # A GIF comes as an animation and a video/mp4 document at once, with no sound.
        if media is None or message.animation is not None or not _is_media(media.mime_type):
            return None
    name = getattr(media, "file_name", None)
    mime = getattr(media, "mime_type", None)
    extension = (
        extension_of(name) or _EXTENSIONS.get(mime or "") or _DEFAULT_EXTENSIONS.get(kind, "")
    )
    return Recording(
        kind=kind,
        file_id=media.file_id,
        file_unique_id=media.file_unique_id,
        declared_size=media.file_size,
        extension=extension,
    )


def _is_media(mime_type: str | None) -> bool:
    return mime_type is not None and mime_type.startswith(("audio/", "video/"))


class BotIntake:
    """What the handlers do: check, download, submit, and reply when something is refused."""

    def __init__(
        self,
        services: Services,
        *,
        max_file_bytes: int = CLOUD_DOWNLOAD_LIMIT,
        allowed_chat_ids: Collection[int] = (),
        short_of_space: Callable[[], bool] = lambda: False,
    ) -> None:
        self.services = services
        #: True while the data dir is below ``[storage] min_free_bytes``: nothing is downloaded.
        self.short_of_space = short_of_space
        #: Largest file taken; also never more than the settings' recording cap.
        self.max_file_bytes = min(max_file_bytes, services.settings.max_record_bytes)
        #: Empty: every chat may send recordings.
        self.allowed_chat_ids = frozenset(allowed_chat_ids)

    def allows(self, chat_id: int) -> bool:
        """True when recordings from ``chat_id`` are taken."""
        return not self.allowed_chat_ids or chat_id in self.allowed_chat_ids

    async def receive(self, bot: Bot, message: Message, recording: Recording) -> None:
        """Turn the recording into a job, or tell the sender why not."""
        extra = {
            "kind": recording.kind,
            "extension": recording.extension,
            "size": recording.declared_size,
        }
        log.info("bot.recording", extra=extra)
        size = recording.declared_size
        if size is not None and size > self.max_file_bytes:
            log.info("bot.too_large", extra=extra)
            await self._reply(bot, message, self.too_large_text)
            return
        if self.short_of_space():
            log.warning("bot.no_room", extra=extra)
            await self._reply(bot, message, NO_ROOM_TEXT)
            return
        try:
            job, is_new = await self._accept(bot, message, recording)
        except asyncio.CancelledError:
            # Shutdown cut the download off. aiogram has already confirmed the
            # update to Telegram, so it will not come again: ask for it again.
            log.info("bot.interrupted", extra=extra)
            with contextlib.suppress(Exception):
                async with asyncio.timeout(_LAST_WORD_SECONDS):
                    await self._reply(bot, message, UNAVAILABLE_TEXT)
            raise
        except FileTooLarge:
            log.info("bot.too_large", extra=extra)
            await self._reply(bot, message, self.too_large_text)
            return
        except (TelegramUnavailable, TelegramRefused) as exc:
            log.warning("bot.download_failed", extra={**extra, "error_type": type(exc).__name__})
            await self._reply(bot, message, DOWNLOAD_FAILED_TEXT)
            return
        except TranscriberError as exc:
            log.warning("bot.submit_failed", extra={**extra, "error_type": type(exc).__name__})
            await self._reply(bot, message, UNAVAILABLE_TEXT)
            return
        if not is_new:
            await self._reply(bot, message, duplicate_text(job))

    async def _accept(self, bot: Bot, message: Message, recording: Recording) -> tuple[Job, bool]:
        services = self.services
        chat_id = message.chat.id
        dedup_key = f"telegram:{chat_id}:{recording.file_unique_id}"
        first = await services.repo.find_by_dedup_key(dedup_key)
        if first is not None:
            # The same file again: answered without downloading it a second time.
            return first, False
        async with services.files.staging(recording.extension) as path:
            await download_file(
                bot,
                recording.file_id,
                path,
                max_bytes=self.max_file_bytes,
                inactivity=services.settings.upload_inactivity_timeout,
            )
            return await submit(
                services,
                path,
                extension=recording.extension,
                origin=Origin.telegram(chat_id, message.message_id),
                dedup_key=dedup_key,
            )

    @property
    def too_large_text(self) -> str:
        """The refusal of a file over the limit, naming the limit."""
        return TOO_LARGE_TEXT.format(limit=f"{self.max_file_bytes // (1024 * 1024)} MB")

    async def refuse(self, bot: Bot, message: Message) -> None:
        """Tell a chat that is not allowed so, politely."""
        # The chat id (never a name) is logged so the owner can allow the chat.
        log.info("bot.chat_refused", extra={"chat_id": message.chat.id})
        await self._reply(bot, message, REFUSED_TEXT)

    async def help(self, bot: Bot, message: Message) -> None:
        """Answer anything that is not a recording with the help text."""
        await self._reply(bot, message, HELP_TEXT)

    async def _reply(self, bot: Bot, message: Message, text: str) -> None:
        try:
            await send_reply(bot, message.chat.id, message.message_id, text)
        except TranscriberError as exc:
            log.warning("bot.reply_failed", extra={"error_type": type(exc).__name__})


def duplicate_text(job: Job) -> str:
    """The reply to a recording already sent to this chat, by what became of the first copy."""
    text = DUPLICATE_TEXTS.get(job.state, DUPLICATE_IN_PROGRESS_TEXT)
    return text.format(error=job.error or "no reason recorded")


def make_router() -> Router:
    """The bot's handlers: refusals first, then recordings, then help for everything else."""
    router = Router(name="transcriber")
    router.message.register(_refuse, _chat_refused)
    router.message.register(_receive, _carries_recording)
    router.message.register(_help)
    return router


def make_dispatcher(
    services: Services,
    *,
    max_file_bytes: int = CLOUD_DOWNLOAD_LIMIT,
    allowed_chat_ids: Collection[int] = (),
    short_of_space: Callable[[], bool] = lambda: False,
) -> Dispatcher:
    """A dispatcher with the bot's handlers; its dependencies go in as workflow data.

    ``max_file_bytes`` is ``download_limit(api_base)``: 20 MB for the cloud
    Bot API, 2,000 MB through a local Bot API server.
    """
    intake = BotIntake(
        services,
        max_file_bytes=max_file_bytes,
        allowed_chat_ids=allowed_chat_ids,
        short_of_space=short_of_space,
    )
    dispatcher = Dispatcher(disable_fsm=True, intake=intake)
    dispatcher.include_router(make_router())
    return dispatcher


def _chat_refused(message: Message, intake: BotIntake) -> bool:
    return not intake.allows(message.chat.id)


def _carries_recording(message: Message) -> dict[str, Recording] | bool:
    recording = recording_of(message)
    return False if recording is None else {"recording": recording}


async def _refuse(message: Message, bot: Bot, intake: BotIntake) -> None:
    await intake.refuse(bot, message)


async def _receive(message: Message, bot: Bot, intake: BotIntake, recording: Recording) -> None:
    await intake.receive(bot, message, recording)


async def _help(message: Message, bot: Bot, intake: BotIntake) -> None:
    await intake.help(bot, message)


class TokenRejected(Exception):  # noqa: N818 - says what happened, like the core's errors
    """Telegram rejected the bot token ([telegram] token)."""

    def __init__(self) -> None:
        super().__init__((self.__doc__ or "").strip())


#: Longest wait between attempts to reach Telegram before polling starts.
_MAX_RETRY_DELAY = 60.0

Handler = Callable[[TelegramObject, dict[str, Any]], Awaitable[Any]]


class BotPolling:
    """Long polling as a task of the service, stopped by the service, never by a signal.

    aiogram gets ``handle_signals=False`` and ``close_bot_session=False``:
    the service owns SIGTERM, and the notifier keeps sending through the
    bot's session until the workers have drained.
    """

    def __init__(
        self,
        bot: Bot,
        dispatcher: Dispatcher,
        *,
        polling_timeout: int = 30,
        concurrency: int = 8,
        retry_delay: float = 1.0,
    ) -> None:
        self.bot = bot
        self.dispatcher = dispatcher
        #: Seconds one getUpdates call waits for news.
        self.polling_timeout = polling_timeout
        #: Updates handled at once: bounds parallel downloads.
        self.concurrency = concurrency
        #: First wait before trying Telegram again when it cannot be reached at start.
        self.retry_delay = retry_delay
        self._task: asyncio.Task[None] | None = None
        self._stopping = asyncio.Event()
        self._polling = asyncio.Event()
        self._inflight: set[asyncio.Task[Any]] = set()
        dispatcher.update.outer_middleware(self._track)
        dispatcher.startup.register(self._on_startup)

    async def start(self) -> None:
        """Check the token with Telegram, then poll in the background; returns at once.

        A rejected token raises ``TokenRejected``. When Telegram cannot be
        reached the service starts anyway and polling begins once it can.
        """
        if self._task is not None:
            raise RuntimeError("the bot is already polling")
        try:
            with telegram_errors():
                try:
                    async with asyncio.timeout(_GET_ME_SECONDS):
                        me = await self.bot.me()
                except TelegramUnauthorizedError:
                    raise TokenRejected from None
            log.info("bot.started", extra={"bot_id": me.id})
        except (TelegramUnavailable, TimeoutError) as exc:
            log.warning("bot.unreachable", extra={"error_type": type(exc).__name__})
        self._task = asyncio.create_task(self._run(), name="transcriber-bot")

    async def stop(self, grace: float) -> None:
        """Take no more updates; let recordings being received finish for ``grace`` s, then cancel.

        A cancelled download leaves no file and no job, and its sender is
        asked to send the recording again (aiogram has already confirmed the
        update to Telegram, so it would not come back by itself).
        """
        task = self._task
        if task is None:
            return
        self._stopping.set()
        if not self._polling.is_set():
            # Still looking for Telegram (a getMe may hang until its timeout): nothing
            # has been taken yet, so cancelling loses nothing.
            task.cancel()
        elif not task.done():
            with contextlib.suppress(RuntimeError):  # polling ended on its own meanwhile
                await self.dispatcher.stop_polling()
        await asyncio.gather(task, return_exceptions=True)
        inflight = set(self._inflight)
        if inflight:
            _, pending = await asyncio.wait(inflight, timeout=grace)
            for handling in pending:
                handling.cancel()
            await asyncio.gather(*inflight, return_exceptions=True)
        log.info("bot.stopped")

    async def close(self) -> None:
        """Close the bot's HTTP session; after the workers drained, as the notifier uses it."""
        await self.bot.session.close()

    async def _run(self) -> None:
        if not await self._reach_telegram():
            return
        try:
            await self.dispatcher.start_polling(
                self.bot,
                polling_timeout=self.polling_timeout,
                handle_signals=False,
                close_bot_session=False,
                tasks_concurrency_limit=self.concurrency,
            )
        except Exception as exc:
            # aiogram retries failed polls itself; this is a bug, and the bot is off.
            log.exception("bot.polling_failed", extra={"error_type": type(exc).__name__})
            raise

    async def _on_startup(self) -> None:
        """Called by aiogram once polling holds its lock: from now on ``stop_polling`` works."""
        self._polling.set()

    async def _reach_telegram(self) -> bool:
        """Ask getMe until it answers (aiogram's polling needs it); False when told to stop."""
        delay = self.retry_delay
        while not self._stopping.is_set():
            try:
                with telegram_errors():
                    async with asyncio.timeout(_GET_ME_SECONDS):
                        await self.bot.me()
            except (TranscriberError, TimeoutError) as exc:
                log.warning(
                    "bot.unreachable",
                    extra={"error_type": type(exc).__name__, "retry_seconds": delay},
                )
            else:
                return True
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(delay):
                    await self._stopping.wait()
            delay = min(delay * 2, _MAX_RETRY_DELAY)
        return False

    async def _track(self, handler: Handler, event: TelegramObject, data: dict[str, Any]) -> Any:
        task = asyncio.current_task()
        if task is not None:
            self._inflight.add(task)
        try:
            return await handler(event, data)
        finally:
            if task is not None:
                self._inflight.discard(task)
