"""The bot's handlers: commands, and recordings checked, downloaded, submitted, or refused.

A recording (``recording_of`` in the telegram adapter reads it out of the
message) is checked against the allowed chats and the download limit, then
taken through the one way in (``transcriber_core.intake.take_in``, as an
HTTP upload is) in the chat's language (``/language``), downloaded to a
staging file only once it is taken (``ChatDoor``). In a group or supergroup (SPEC §21) the chat's
``/mode`` decides: ``auto`` takes every member's recording, ``command`` only
one answered with ``/transcribe`` or one whose caption mentions the bot;
only the group's administrators change its settings (``getChatMember``,
remembered for a minute). A group hears nothing else from the bot: no help
text for ordinary talk. Replies are in Russian or English (``texts``). The SRT and VTT buttons
under a transcript (``callback_query``) are answered from the job database.
Log lines name the kind of file, its extension and size, never the sender
or the file name (reference: Privacy).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable, Collection, Mapping

from aiogram import Bot, Dispatcher, Router
from aiogram.filters import Command, CommandObject
from aiogram.types import CallbackQuery, Message

from transcriber_adapters.memory import MemoryChatStore
from transcriber_adapters.telegram import (
    CLOUD_DOWNLOAD_LIMIT,
    FileTooLarge,
    Recording,
    TelegramRefused,
    TelegramUnavailable,
    answer_button,
    document_name,
    download_file,
    is_chat_admin,
    recording_of,
    send_document,
    send_reply,
    summary_button,
    transcript_button,
)
from transcriber_app.bot.texts import (
    Texts,
    accepted_languages,
    duplicate_text,
    link_refused_text,
    quota_text,
    settings_text,
    texts_for,
    too_large_text,
    voice_note_title,
)
from transcriber_core import summary_steps
from transcriber_core.entities import ChatMode, ChatSettings, Job, Origin, State
from transcriber_core.errors import (
    FetchRefused,
    FetchUnavailable,
    JobNotFound,
    OptionRefused,
    QuotaExceeded,
    ServiceCondition,
    TranscriberError,
)
from transcriber_core.fetching import well_formed_link
from transcriber_core.intake import Taken, take_in
from transcriber_core.languages import check_language
from transcriber_core.naming import link_digest
from transcriber_core.people import Person, link_code_hash, link_code_of
from transcriber_core.ports import ChatLinks, ChatStore, Proof, Sender, Staged, Wishes
from transcriber_core.rendering import TranscriptFormat, render
from transcriber_core.services import Services
from transcriber_core.usage import telegram_payer

log = logging.getLogger("transcriber.bot")

#: How long a recording that met an outage (S3 or the database down) is tried again
#: before the sender is asked to send it again; the first pause, doubling up to the last.
_OUTAGE_SECONDS = 60.0
_OUTAGE_PAUSE = 0.5
_OUTAGE_PAUSE_CAP = 10.0
#: How long a getChatMember answer is trusted: a demoted admin loses the right within it.
ADMIN_CACHE_SECONDS = 60.0
#: Chat types where several members talk and the bot answers only what is addressed to it.
GROUP_TYPES = frozenset({"group", "supergroup"})


def payer_of(message: Message) -> str:
    """Whose daily quota a recording counts against: the Telegram user who asked for it.

    ``message`` is the one that asked: the recording itself, or the
    ``/transcribe`` that answered it, whose sender pays (ADR 59, 67). A
    message with no user (a channel's post, an anonymous group admin)
    counts against its chat; a chat's id is negative for groups and
    channels, so it never equals a user's.
    """
    sender = message.from_user
    return telegram_payer(sender.id if sender is not None else message.chat.id)


class BotIntake:
    """What the handlers do: check, download, submit, keep chat settings, reply when refused."""

    def __init__(
        self,
        services: Services,
        *,
        chats: ChatStore | None = None,
        max_file_bytes: int = CLOUD_DOWNLOAD_LIMIT,
        allowed_chat_ids: Collection[int] = (),
        short_of_space: Callable[[], bool] = lambda: False,
        links: ChatLinks | None = None,
    ) -> None:
        self.services = services
        #: Chats linked to people (ADR 60); None: ``/link`` is not offered (no people store).
        self.links = links
        #: Each chat's settings; the job database in service, a dict of this process in tests.
        self.chats: ChatStore = chats if chats is not None else MemoryChatStore(services.clock)
        #: True while the data dir is below ``[storage] min_free_bytes``: nothing is downloaded.
        self.short_of_space = short_of_space
        #: Largest file taken; also never more than the settings' recording cap.
        self.max_file_bytes = min(max_file_bytes, services.settings.max_record_bytes)
        #: Empty: every chat may send recordings.
        self.allowed_chat_ids = frozenset(allowed_chat_ids)
        #: (chat, user) -> (is admin, until when on the loop's clock).
        self._admins: dict[tuple[int, int], tuple[bool, float]] = {}
        #: One settings change at a time per chat in this process (read, check, write).
        self._changing: weakref.WeakValueDictionary[int, asyncio.Lock] = (
            weakref.WeakValueDictionary()
        )

    def allows(self, chat_id: int) -> bool:
        """True when recordings from ``chat_id`` are taken."""
        return not self.allowed_chat_ids or chat_id in self.allowed_chat_ids

    async def settings_of(self, chat_id: int) -> ChatSettings:
        """The chat's settings; the defaults while the database does not answer."""
        try:
            return await self.chats.chat_settings(chat_id)
        except TranscriberError as exc:
            log.warning("bot.settings_unavailable", extra={"error_type": type(exc).__name__})
            return ChatSettings(chat_id=chat_id)

    async def texts(self, message: Message, settings: ChatSettings | None = None) -> Texts:
        """The language to answer ``message`` in: the chat's, else its sender's."""
        if settings is None:
            settings = await self.settings_of(message.chat.id)
        sender = message.from_user
        return texts_for(settings, None if sender is None else sender.language_code)

    async def recording(self, bot: Bot, message: Message, recording: Recording) -> None:
        """A message carrying a recording: taken in a private chat, in a group by its mode."""
        settings = await self.settings_of(message.chat.id)
        addressed = not is_group(message) or settings.mode is ChatMode.AUTO
        if not addressed and not await _mentions_bot(bot, message):
            return
        await self.receive(bot, message, recording, settings=settings)

    async def mentioned(self, bot: Bot, message: Message) -> None:
        """A group's reply to a recording that mentions the bot: taken as a ``/transcribe``.

        In command mode a voice note has no caption to mention the bot in; a
        reply that does (``@bot``, SPEC §26) asks for it as ``/transcribe`` does.
        A reply mentioning another bot, or none, is the members' own talk.
        """
        if await _mentions_bot(bot, message):
            await self.transcribe(bot, message)

    async def transcribe(self, bot: Bot, message: Message) -> None:
        """``/transcribe`` answering a recording: that recording is taken, replied to itself."""
        target = message.reply_to_message
        recording = None if target is None else recording_of(target)
        settings = await self.settings_of(message.chat.id)
        url = None if target is None else link_of(target)
        if target is not None and recording is None and url is not None:
            await self.receive(bot, target, url=url, settings=settings, asked_by=message)
            return
        if target is None or recording is None:
            await self._reply(bot, message, (await self.texts(message, settings)).transcribe_usage)
            return
        await self.receive(bot, target, recording, settings=settings, asked_by=message)

    async def receive(  # noqa: PLR0911 - one answer per refusal reads best
        self,
        bot: Bot,
        message: Message,
        recording: Recording | None = None,
        *,
        url: str | None = None,
        settings: ChatSettings | None = None,
        asked_by: Message | None = None,
    ) -> None:
        """Turn the recording (or the link, SPEC §28) in ``message`` into a job, or say why not.

        ``asked_by`` is the ``/transcribe`` that asked for it: its sender pays
        for the recording, and refusals answer it (ADR 67). A refused link is
        told why in the chat's language, never repeating the link.
        """
        settings = settings or await self.settings_of(message.chat.id)
        answer = asked_by or message
        texts = await self.texts(answer, settings)
        extra: dict[str, object] = {"kind": "link"}
        if recording is not None:
            extra = {
                "kind": recording.kind,
                "extension": recording.extension,
                "size": recording.declared_size,
            }
        log.info("bot.recording", extra=extra)
        size = None if recording is None else recording.declared_size
        if size is not None and size > self.max_file_bytes:
            await self._too_large(bot, answer, texts, extra)
            return
        if self.short_of_space():
            log.warning("bot.no_room", extra=extra)
            await self._reply(bot, answer, texts.no_room)
            return
        door = ChatDoor(self, bot, message, settings, recording=recording, url=url, asker=answer)
        try:
            taken = await self._accept_patiently(door, extra)
        except asyncio.CancelledError:
            # Shutdown cut the download off. The update is not confirmed to
            # Telegram (ADR 53): the next poller reads it again and takes it.
            log.info("bot.interrupted", extra=extra)
            raise
        except FileTooLarge:
            await self._too_large(bot, answer, texts, extra)
            return
        except FetchRefused as exc:
            log.info("bot.link_refused", extra={**extra, "code": exc.code})
            await self._reply(bot, answer, link_refused_text(exc.code, texts))
            return
        except FetchUnavailable:
            log.info("bot.link_unreachable", extra=extra)
            await self._reply(bot, answer, texts.link_unreachable)
            return
        except QuotaExceeded as exc:
            log.info("bot.quota_exceeded", extra=extra)
            await self._reply(bot, answer, _addressed(answer, quota_text(exc, texts)))
            return
        except (TelegramUnavailable, TelegramRefused) as exc:
            log.warning("bot.download_failed", extra={**extra, "error_type": type(exc).__name__})
            await self._reply(bot, answer, texts.download_failed)
            return
        except TranscriberError as exc:
            log.warning("bot.submit_failed", extra={**extra, "error_type": type(exc).__name__})
            await self._reply(bot, answer, texts.unavailable)
            return
        if not taken.is_new:
            await self._answer_again(bot, answer, taken.job, texts)

    async def _answer_again(self, bot: Bot, message: Message, job: Job, texts: Texts) -> None:
        """A recording this chat sent before: told so, unless this is the same message again."""
        if job.origin == Origin.telegram(message.chat.id, message.message_id):
            # The same update again (a restart before its offset was confirmed, or
            # Telegram redelivering a webhook): it was taken, and it is told already.
            log.info("bot.redelivered", extra={"job_id": job.id})
            return
        await self._reply(bot, message, duplicate_text(job, texts))

    async def link_message(self, bot: Bot, message: Message, url: str) -> None:
        """A message that is a link: taken in a private chat, in a group only when addressed."""
        if is_group(message) and not await _mentions_bot(bot, message):
            return
        await self.receive(bot, message, url=url)

    async def _accept_patiently(self, door: ChatDoor, extra: Mapping[str, object]) -> Taken:
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
                return await self._accept(door)
            except ServiceCondition as exc:
                if not exc.outage or loop.time() + pause > give_up:
                    raise
                log.info(
                    "bot.outage_wait", extra={**extra, "code": exc.code, "pause_seconds": pause}
                )
            await asyncio.sleep(pause)
            pause = min(pause * 2, _OUTAGE_PAUSE_CAP)

    async def _accept(self, door: ChatDoor) -> Taken:
        message = door.message
        return await take_in(
            self.services,
            door,
            origin=Origin.telegram(message.chat.id, message.message_id),
            dedup_key=door.dedup_key,
        )

    async def linked_person(self, message: Message) -> Person | None:
        """The person a private chat is linked to; None in a group or when none is."""
        if self.links is None or is_group(message):
            return None
        return await self.links.person_for_chat(message.chat.id)

    async def link(self, bot: Bot, message: Message, value: str | None) -> None:
        """``/link CODE``: link this private chat to the code's person, once (ADR 60)."""
        texts = await self.texts(message)
        if is_group(message):
            await self._reply(bot, message, texts.link_private_only)
            return
        code = link_code_of(value or "")
        if code is None or self.links is None:
            await self._reply(bot, message, texts.link_usage)
            return
        try:
            person = await self.links.use_link_code(link_code_hash(code), chat_id=message.chat.id)
        except TranscriberError as exc:
            log.warning("bot.link_failed", extra={"error_type": type(exc).__name__})
            await self._reply(bot, message, texts.unavailable)
            return
        if person is None:
            log.info("bot.link_refused")
            await self._reply(bot, message, texts.link_refused)
            return
        log.info("bot.linked")
        await self._reply(bot, message, texts.link_done.format(name=person.name))

    async def unlink(self, bot: Bot, message: Message) -> None:
        """``/unlink``: this private chat's new recordings are no longer a person's."""
        texts = await self.texts(message)
        if is_group(message):
            await self._reply(bot, message, texts.link_private_only)
            return
        try:
            done = self.links is not None and await self.links.unlink_chat(message.chat.id)
        except TranscriberError as exc:
            log.warning("bot.link_failed", extra={"error_type": type(exc).__name__})
            await self._reply(bot, message, texts.unavailable)
            return
        await self._reply(bot, message, texts.unlink_done if done else texts.unlink_none)

    async def _too_large(
        self, bot: Bot, message: Message, texts: Texts, extra: Mapping[str, object]
    ) -> None:
        """Refuse a file over the limit, whether its size was stated or found out downloading."""
        log.info("bot.too_large", extra=extra)
        await self._reply(bot, message, too_large_text(self.max_file_bytes, texts))

    async def refuse(self, bot: Bot, message: Message) -> None:
        """Tell a chat that is not allowed so, politely."""
        # The chat id (never a name) is logged so the owner can allow the chat.
        log.info("bot.chat_refused", extra={"chat_id": message.chat.id})
        await self._reply(bot, message, (await self.texts(message)).refused)

    async def help(self, bot: Bot, message: Message) -> None:
        """``/start``, ``/help``, and anything in a private chat that is not a recording."""
        await self._reply(bot, message, (await self.texts(message)).help)

    @property
    def _summaries_offered(self) -> bool:
        """Whether this service summarises (``[llm]`` set, SPEC §27)."""
        return summary_steps.offered(self.services)

    async def show_settings(self, bot: Bot, message: Message) -> None:
        """``/settings``: the chat's language and mode, and its summaries when offered."""
        settings = await self.settings_of(message.chat.id)
        texts = await self.texts(message, settings)
        offered = self._summaries_offered
        auto_summary = self.services.settings.auto_summary if offered else None
        await self._reply(bot, message, settings_text(settings, texts, auto_summary=auto_summary))

    def _change_lock(self, chat_id: int) -> asyncio.Lock:
        lock = self._changing.get(chat_id)
        if lock is None:
            lock = self._changing[chat_id] = asyncio.Lock()
        return lock

    async def set_language(self, bot: Bot, message: Message, value: str | None) -> None:
        """``/language <code|auto>``: the chat's recordings' language, checked as HTTP's is."""
        async with self._change_lock(message.chat.id):
            await self._set_language(bot, message, value)

    async def _set_language(self, bot: Bot, message: Message, value: str | None) -> None:
        settings = await self.settings_of(message.chat.id)
        texts = await self.texts(message, settings)
        languages = self.services.recognizer.abilities.languages
        accepted = accepted_languages(languages)
        if not value:
            current = settings.language or texts.auto
            await self._reply(
                bot, message, texts.language_usage.format(language=current, accepted=accepted)
            )
            return
        if not await self._may_change(bot, message, texts):
            return
        try:
            language = check_language(value, self.services.recognizer.abilities)
        except OptionRefused:
            await self._reply(bot, message, texts.language_refused.format(accepted=accepted))
            return
        changed = await self._save(
            bot, message, texts, self.chats.set_chat_language(settings.chat_id, language)
        )
        if changed is None:
            return
        # Answered in the language just chosen, when the bot speaks it.
        texts = await self.texts(message, changed)
        shown = language or texts.auto
        await self._reply(bot, message, texts.language_set.format(language=shown))

    async def set_mode(self, bot: Bot, message: Message, value: str | None) -> None:
        """``/mode auto|command``: what a group has transcribed; its administrators only."""
        async with self._change_lock(message.chat.id):
            await self._set_mode(bot, message, value)

    async def _set_mode(self, bot: Bot, message: Message, value: str | None) -> None:
        settings = await self.settings_of(message.chat.id)
        texts = await self.texts(message, settings)
        if not is_group(message):
            await self._reply(bot, message, texts.mode_private)
            return
        try:
            mode = ChatMode((value or "").strip().lower())
        except ValueError:
            await self._reply(bot, message, texts.mode_usage)
            return
        if not await self._may_change(bot, message, texts):
            return
        changed = await self._save(
            bot, message, texts, self.chats.set_chat_mode(settings.chat_id, mode)
        )
        if changed is not None:
            await self._reply(bot, message, texts.mode_set[mode])

    async def set_summary(self, bot: Bot, message: Message, value: str | None) -> None:
        """``/summary auto|off``: whether each recording of the chat gets a summary (SPEC §27)."""
        async with self._change_lock(message.chat.id):
            await self._set_summary(bot, message, value)

    async def _set_summary(self, bot: Bot, message: Message, value: str | None) -> None:
        settings = await self.settings_of(message.chat.id)
        texts = await self.texts(message, settings)
        if not self._summaries_offered:
            await self._reply(bot, message, texts.summary_unavailable)
            return
        wanted = {"auto": True, "off": False}.get((value or "").strip().lower())
        if wanted is None:
            await self._reply(bot, message, texts.summary_usage)
            return
        if not await self._may_change(bot, message, texts):
            return
        changed = await self._save(
            bot, message, texts, self.chats.set_chat_summary(settings.chat_id, wanted)
        )
        if changed is not None:
            await self._reply(bot, message, texts.summary_set[wanted])

    async def _save(
        self, bot: Bot, message: Message, texts: Texts, change: Awaitable[ChatSettings]
    ) -> ChatSettings | None:
        """Await the store's ``change``; the settings after it, or None (the sender told why)."""
        try:
            settings = await change
        except TranscriberError as exc:
            log.warning("bot.settings_unavailable", extra={"error_type": type(exc).__name__})
            await self._reply(bot, message, texts.unavailable)
            return None
        log.info(
            "bot.settings_changed",
            extra={
                "language": settings.language or "auto",
                "mode": settings.mode.value,
                "summary": settings.summary,
            },
        )
        return settings

    async def _may_change(self, bot: Bot, message: Message, texts: Texts) -> bool:
        """True when the sender may change this chat's settings; else they are told so."""
        if not is_group(message):
            return True
        chat_id = message.chat.id
        sender_chat = message.sender_chat
        if sender_chat is not None and sender_chat.id == chat_id:
            # An anonymous administrator posts as the group itself.
            return True
        user = message.from_user
        allowed = user is not None and await self._is_admin(bot, chat_id, user.id)
        if not allowed:
            await self._reply(bot, message, texts.not_admin)
        return allowed

    async def _is_admin(self, bot: Bot, chat_id: int, user_id: int) -> bool:
        loop = asyncio.get_running_loop()
        known = self._admins.get((chat_id, user_id))
        if known is not None and known[1] > loop.time():
            return known[0]
        try:
            admin = await is_chat_admin(bot, chat_id, user_id)
        except TranscriberError as exc:
            log.warning("bot.admin_check_failed", extra={"error_type": type(exc).__name__})
            return False
        self._admins[chat_id, user_id] = (admin, loop.time() + ADMIN_CACHE_SECONDS)
        return admin

    async def send_format(self, bot: Bot, query: CallbackQuery, fmt: str, job_id: str) -> None:
        """A transcript button: the job's transcript as ``fmt`` (srt, vtt), replying to it.

        Read from the job database, so it works on any API process and after
        any restart; a job that is gone, or is not this chat's, is refused.
        """
        message = query.message
        if message is None:
            await self._answer(bot, query)
            return
        chat_id = message.chat.id
        settings = await self.settings_of(chat_id)
        texts = texts_for(settings, query.from_user.language_code)
        if not self.allows(chat_id):
            await self._answer(bot, query, texts.refused)
            return
        job = await self._buttons_job(bot, query, texts, job_id, chat_id)
        if job is None:
            return
        body = await asyncio.to_thread(render, job, TranscriptFormat(fmt))
        log.info("bot.transcript_button", extra={"job_id": job.id, "format": fmt})
        try:
            await send_document(
                bot, chat_id, message.message_id, filename=document_name(job, fmt), body=body
            )
        except TranscriberError as exc:
            log.warning("bot.reply_failed", extra={"error_type": type(exc).__name__})
            await self._answer(bot, query, texts.unavailable)
            return
        await self._answer(bot, query)

    async def ask_summary(self, bot: Bot, query: CallbackQuery, job_id: str) -> None:
        """The Summary button (ADR 92): queue the recording's summary; it comes when built.

        Only for this chat's own recording, as the transcript buttons; asked
        twice while pending, it is built once (``summary_steps.request``).
        """
        message = query.message
        if message is None:
            await self._answer(bot, query)
            return
        chat_id = message.chat.id
        texts = texts_for(await self.settings_of(chat_id), query.from_user.language_code)
        if not self.allows(chat_id):
            await self._answer(bot, query, texts.refused)
            return
        if not self._summaries_offered:
            await self._answer(bot, query, texts.summary_unavailable)
            return
        job = await self._buttons_job(bot, query, texts, job_id, chat_id)
        if job is None:
            return
        try:
            await summary_steps.request(self.services, job.id)
        except JobNotFound:
            await self._answer(bot, query, texts.transcript_gone)
            return
        except TranscriberError as exc:
            log.warning("bot.button_failed", extra={"error_type": type(exc).__name__})
            await self._answer(bot, query, texts.unavailable)
            return
        log.info("bot.summary_button", extra={"job_id": job.id})
        await self._answer(bot, query, texts.summary_asked)

    async def _buttons_job(
        self, bot: Bot, query: CallbackQuery, texts: Texts, job_id: str, chat_id: int
    ) -> Job | None:
        """The done job a button under its transcript names, if it is this chat's; else None,
        the presser told why."""
        try:
            job = await self.services.jobs.get(job_id)
        except JobNotFound:
            job = None
        except TranscriberError as exc:
            log.warning("bot.button_failed", extra={"error_type": type(exc).__name__})
            await self._answer(bot, query, texts.unavailable)
            return None
        if job is None or job.state is not State.DONE or job.origin.chat_id != chat_id:
            await self._answer(bot, query, texts.transcript_gone)
            return None
        return job

    async def _answer(self, bot: Bot, query: CallbackQuery, text: str | None = None) -> None:
        try:
            await answer_button(bot, query.id, text)
        except TranscriberError as exc:
            log.warning("bot.reply_failed", extra={"error_type": type(exc).__name__})

    async def _reply(self, bot: Bot, message: Message, text: str) -> None:
        try:
            await send_reply(bot, message.chat.id, message.message_id, text)
        except TranscriberError as exc:
            log.warning("bot.reply_failed", extra={"error_type": type(exc).__name__})


class ChatDoor:
    """A recording in a chat as a door of the one way in: downloaded only once it is taken.

    Or a link sent to the chat (``url``, SPEC §28): the job fetches it.
    """

    def __init__(
        self,
        intake: BotIntake,
        bot: Bot,
        message: Message,
        settings: ChatSettings,
        *,
        asker: Message,
        recording: Recording | None = None,
        url: str | None = None,
    ) -> None:
        self.intake = intake
        self.bot = bot
        self.message = message
        self.recording = recording
        self.url = url
        self.settings = settings
        #: The message that asked for it: the recording's own, or a ``/transcribe`` answering it.
        self.asker = asker

    async def sender(self) -> Sender:
        """Whose job the recording makes, and who pays for it.

        A private chat linked to a person makes that person's jobs, paid by
        them (ADR 60). Otherwise the one who asked pays: in a group a
        ``/transcribe`` on a member's recording is the asker's (SPEC §29).
        """
        person = await self.intake.linked_person(self.message)
        owner = None if person is None else person.owner_key
        return Sender(owner=owner, payer=owner or payer_of(self.asker))

    async def sender_again(self) -> Sender:
        """``sender`` once the file is in: one disabled or unlinked meanwhile is not it (§29)."""
        return await self.sender()

    @property
    def dedup_key(self) -> str:
        """A file once per chat (its unique id), and a link once per chat (its digest)."""
        chat_id = self.message.chat.id
        if self.url is not None:
            return f"telegram:{chat_id}:link:{link_digest(self.url)}"
        if self.recording is None:  # pragma: no cover - made with one or the other
            raise ValueError("a chat's door needs a recording or a link")
        return f"telegram:{chat_id}:{self.recording.file_unique_id}"

    async def proof(self, first: Job) -> Proof:
        """Nothing to read: the key holds the file's unique id (the link's digest)."""
        return Proof()

    @contextlib.asynccontextmanager
    async def staged(self) -> AsyncIterator[Staged]:
        """The file downloaded into a staging file (or the link), in the chat's language.

        A file's title is the bot's own "Voice note of …" in the chat's language, dated when
        it was sent: never the sender's file name (SPEC §26). A link's is the page's own,
        set by its fetch (SPEC §28).
        """
        services = self.intake.services
        if self.url is not None:
            wishes = Wishes(language=self.settings.language, standing_language=True)
            yield Staged(path=None, extension="", url=self.url, wishes=wishes)
            return
        if self.recording is None:  # pragma: no cover - made with one or the other
            raise ValueError("a chat's door needs a recording or a link")
        extension = self.recording.extension
        async with services.files.staging(extension) as path:
            await download_file(
                self.bot,
                self.recording.file_id,
                path,
                max_bytes=self.intake.max_file_bytes,
                inactivity=services.settings.upload_inactivity_timeout,
            )
            texts = await self.intake.texts(self.message, self.settings)
            wishes = Wishes(
                language=self.settings.language,
                standing_language=True,
                title=voice_note_title(texts, self.message.date),
                # ``/summary auto`` asks, ``off`` declines; otherwise ``[llm] auto_summary``.
                summary=self.settings.summary,
            )
            yield Staged(path=path, extension=extension, wishes=wishes)


def _addressed(answer: Message, text: str) -> str:
    """``text`` as said to the sender of ``answer``: in a group, by their first name.

    Several members talk there; a reply about whose time was spent names
    them, so nobody reads another member's quota as their own.
    """
    sender = answer.from_user
    if not is_group(answer) or sender is None:
        return text
    return f"{sender.first_name}: {text}"


def link_of(message: Message) -> str | None:
    """The link a message is (SPEC §28): its text one http(s) link, beside @mentions only."""
    text = message.text
    if not text or text.startswith("/"):
        return None
    words = [word for word in text.split() if not word.startswith("@")]
    if len(words) != 1 or not well_formed_link(words[0]):
        return None
    return words[0]


def is_group(message: Message) -> bool:
    """True in a group or supergroup, where the bot speaks only when addressed."""
    return message.chat.type in GROUP_TYPES


async def _mentions_bot(bot: Bot, message: Message) -> bool:
    """True when the message's caption or text names the bot by its @username.

    The whole username: ``@transcriber_bot`` is not mentioned by ``@transcriber_bot2``.
    """
    me = await bot.me()
    if not me.username:
        return False
    said = message.caption or message.text or ""
    named = re.compile(rf"@{re.escape(me.username)}(?![A-Za-z0-9_])", re.IGNORECASE)
    return named.search(said) is not None


def make_router() -> Router:
    """The handlers: refusals, commands, recordings, then help (private chats only)."""
    router = Router(name="transcriber")
    router.message.register(_refuse, _refusal_due)
    router.message.register(_ignore, _chat_refused)
    router.message.register(_help, Command("start", "help"))
    router.message.register(_language, Command("language"))
    router.message.register(_mode, Command("mode"))
    router.message.register(_summary, Command("summary"))
    router.message.register(_settings, Command("settings"))
    router.message.register(_transcribe, Command("transcribe"))
    router.message.register(_link, Command("link"))
    router.message.register(_unlink, Command("unlink"))
    router.message.register(_receive, _carries_recording)
    router.message.register(_mentioned, _answers_recording_in_group)
    router.message.register(_receive_link, _carries_link)
    router.message.register(_help, _is_private)
    router.callback_query.register(_button, _is_transcript_button)
    router.callback_query.register(_summary_button, _is_summary_button)
    return router


def make_dispatcher(
    services: Services,
    *,
    chats: ChatStore | None = None,
    max_file_bytes: int = CLOUD_DOWNLOAD_LIMIT,
    allowed_chat_ids: Collection[int] = (),
    short_of_space: Callable[[], bool] = lambda: False,
    links: ChatLinks | None = None,
) -> Dispatcher:
    """A dispatcher with the bot's handlers; its dependencies go in as workflow data.

    ``max_file_bytes`` is ``download_limit(api_base)``: 20 MB for the cloud
    Bot API, 2,000 MB through a local Bot API server. ``chats`` keeps each
    chat's settings (the job database; None: this process's memory).
    ``links`` are the chats linked to people (the people store; None: no ``/link``).
    """
    intake = BotIntake(
        services,
        chats=chats,
        max_file_bytes=max_file_bytes,
        allowed_chat_ids=allowed_chat_ids,
        short_of_space=short_of_space,
        links=links,
    )
    dispatcher = Dispatcher(disable_fsm=True, intake=intake)
    dispatcher.include_router(make_router())
    return dispatcher


def _chat_refused(message: Message, intake: BotIntake) -> bool:
    return not intake.allows(message.chat.id)


def _refusal_due(message: Message, intake: BotIntake) -> bool:
    """A refused chat is told so in private, and in a group only when it addresses the bot."""
    if intake.allows(message.chat.id):
        return False
    if not is_group(message):
        return True
    return (message.text or "").startswith("/")


def _is_private(message: Message) -> bool:
    return message.chat.type == "private"


def _carries_recording(message: Message) -> dict[str, Recording] | bool:
    recording = recording_of(message)
    return False if recording is None else {"recording": recording}


def _carries_link(message: Message) -> dict[str, str] | bool:
    url = link_of(message)
    return False if url is None else {"url": url}


async def _receive_link(message: Message, bot: Bot, intake: BotIntake, url: str) -> None:
    await intake.link_message(bot, message, url)


async def _refuse(message: Message, bot: Bot, intake: BotIntake) -> None:
    await intake.refuse(bot, message)


async def _ignore(message: Message) -> None:
    """A group that is not allowed, talking among itself: nothing to say."""


async def _receive(message: Message, bot: Bot, intake: BotIntake, recording: Recording) -> None:
    await intake.recording(bot, message, recording)


def _answers_recording_in_group(message: Message) -> bool:
    """A group member's reply to a recording: it may mention the bot (``BotIntake.mentioned``)."""
    target = message.reply_to_message
    return is_group(message) and target is not None and recording_of(target) is not None


async def _mentioned(message: Message, bot: Bot, intake: BotIntake) -> None:
    await intake.mentioned(bot, message)


async def _transcribe(message: Message, bot: Bot, intake: BotIntake) -> None:
    await intake.transcribe(bot, message)


async def _language(message: Message, bot: Bot, intake: BotIntake, command: CommandObject) -> None:
    await intake.set_language(bot, message, command.args)


async def _mode(message: Message, bot: Bot, intake: BotIntake, command: CommandObject) -> None:
    await intake.set_mode(bot, message, command.args)


async def _summary(message: Message, bot: Bot, intake: BotIntake, command: CommandObject) -> None:
    await intake.set_summary(bot, message, command.args)


async def _link(message: Message, bot: Bot, intake: BotIntake, command: CommandObject) -> None:
    await intake.link(bot, message, command.args)


async def _unlink(message: Message, bot: Bot, intake: BotIntake) -> None:
    await intake.unlink(bot, message)


async def _settings(message: Message, bot: Bot, intake: BotIntake) -> None:
    await intake.show_settings(bot, message)


def _is_transcript_button(query: CallbackQuery) -> dict[str, str] | bool:
    asked = transcript_button(query.data)
    return False if asked is None else {"fmt": asked[0], "job_id": asked[1]}


def _is_summary_button(query: CallbackQuery) -> dict[str, str] | bool:
    job_id = summary_button(query.data)
    return False if job_id is None else {"job_id": job_id}


async def _summary_button(query: CallbackQuery, bot: Bot, intake: BotIntake, job_id: str) -> None:
    await intake.ask_summary(bot, query, job_id)


async def _button(query: CallbackQuery, bot: Bot, intake: BotIntake, fmt: str, job_id: str) -> None:
    await intake.send_format(bot, query, fmt, job_id)


async def _help(message: Message, bot: Bot, intake: BotIntake) -> None:
    await intake.help(bot, message)
