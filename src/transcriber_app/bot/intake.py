"""The bot's handlers: check a recording, download it, submit it, or say why not.

A recording (``recording_of`` in the telegram adapter reads it out of the
message) is checked against the allowed chats and the download limit,
streamed to a staging file and submitted like an HTTP upload. Anything else
gets the help text. Log lines name the kind of file, its extension and
size, never the sender or the file name (reference: Privacy).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Collection, Mapping

from aiogram import Bot, Dispatcher, Router
from aiogram.types import Message

from transcriber_adapters.telegram import (
    CLOUD_DOWNLOAD_LIMIT,
    FileTooLarge,
    Recording,
    TelegramRefused,
    TelegramUnavailable,
    download_file,
    recording_of,
    send_reply,
)
from transcriber_app.bot.texts import (
    DOWNLOAD_FAILED_TEXT,
    HELP_TEXT,
    NO_ROOM_TEXT,
    REFUSED_TEXT,
    UNAVAILABLE_TEXT,
    duplicate_text,
    too_large_text,
)
from transcriber_core.entities import Job, Origin
from transcriber_core.errors import ServiceCondition, TranscriberError
from transcriber_core.intake import first_job, submit
from transcriber_core.services import Services

log = logging.getLogger("transcriber.bot")

#: How long a recording that met an outage (S3 or the database down) is tried again
#: before the sender is asked to send it again; the first pause, doubling up to the last.
_OUTAGE_SECONDS = 60.0
_OUTAGE_PAUSE = 0.5
_OUTAGE_PAUSE_CAP = 10.0


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
            await self._too_large(bot, message, extra)
            return
        if self.short_of_space():
            log.warning("bot.no_room", extra=extra)
            await self._reply(bot, message, NO_ROOM_TEXT)
            return
        try:
            job, is_new = await self._accept_patiently(bot, message, recording, extra)
        except asyncio.CancelledError:
            # Shutdown cut the download off. The update is not confirmed to
            # Telegram (ADR 53): the next poller reads it again and takes it.
            log.info("bot.interrupted", extra=extra)
            raise
        except FileTooLarge:
            await self._too_large(bot, message, extra)
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
            await self._answer_again(bot, message, job)

    async def _answer_again(self, bot: Bot, message: Message, job: Job) -> None:
        """A recording this chat sent before: told so, unless this is the same message again."""
        if job.origin == Origin.telegram(message.chat.id, message.message_id):
            # The same update again (a restart before its offset was confirmed, or
            # Telegram redelivering a webhook): it was taken, and it is told already.
            log.info("bot.redelivered", extra={"job_id": job.id})
            return
        await self._reply(bot, message, duplicate_text(job))

    async def _accept_patiently(
        self, bot: Bot, message: Message, recording: Recording, extra: Mapping[str, object]
    ) -> tuple[Job, bool]:
        """``_accept``, again while a dependency is down, for up to ``_OUTAGE_SECONDS`` (ADR 43).

        A recording turned away here is answered, its update confirmed, and
        only sent again if its sender does it, so a short outage is waited
        out (downloading the file again) rather than told.
        """
        loop = asyncio.get_running_loop()
        give_up = loop.time() + _OUTAGE_SECONDS
        pause = _OUTAGE_PAUSE
        while True:
            try:
                return await self._accept(bot, message, recording)
            except ServiceCondition as exc:
                if not exc.outage or loop.time() + pause > give_up:
                    raise
                log.info(
                    "bot.outage_wait", extra={**extra, "code": exc.code, "pause_seconds": pause}
                )
            await asyncio.sleep(pause)
            pause = min(pause * 2, _OUTAGE_PAUSE_CAP)

    async def _accept(self, bot: Bot, message: Message, recording: Recording) -> tuple[Job, bool]:
        services = self.services
        chat_id = message.chat.id
        dedup_key = f"telegram:{chat_id}:{recording.file_unique_id}"
        first = await first_job(services, dedup_key)
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

    async def _too_large(self, bot: Bot, message: Message, extra: Mapping[str, object]) -> None:
        """Refuse a file over the limit, whether its size was stated or found out downloading."""
        log.info("bot.too_large", extra=extra)
        await self._reply(bot, message, too_large_text(self.max_file_bytes))

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
