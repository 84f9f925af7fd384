"""``TelegramNotifier``: a job's outcome as replies to the message that brought its recording."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator

from aiogram import Bot
from aiogram.types import InlineKeyboardMarkup

from transcriber_adapters.telegram.buttons import document_name, send_document, transcript_buttons
from transcriber_adapters.telegram.client import send_reply
from transcriber_adapters.telegram.errors import telegram_errors
from transcriber_core.entities import Job, OriginKind
from transcriber_core.ports import Event
from transcriber_core.subtitles import plain_text

log = logging.getLogger("transcriber.telegram")

#: Telegram's limit for one message, counted in UTF-16 code units.
MESSAGE_LIMIT = 4096
#: A transcript needing more messages than this goes as one ``.txt`` document.
MAX_MESSAGES = 3

ACCEPTED_TEXT = "Got it, transcribing. The text will come as a reply to this message."
EMPTY_TEXT = "Done, but no speech was recognised in this recording."
#: How much of a long transcript its document's caption shows, in characters.
CAPTION_CHARS = 300
FAILED_TEXT = "Could not transcribe this recording: {reason}"
FAILED_NO_REASON = "Could not transcribe this recording."
DEAD_TEXT = (
    "Sorry, I gave up on this recording after repeated errors. "
    "Please send it again later.\n({reason})"
)


class TelegramNotifier:
    """Replies in the job's chat to the message that brought the recording.

    ``accepted`` is a short acknowledgement; ``done`` is the transcript, split
    into messages of at most 4,096 characters on line or word boundaries, or
    one UTF-8 ``.txt`` document (named by the job's date and id, its first
    lines as the caption) when it would take more than ``max_messages``,
    with SRT and VTT buttons under the last message or the document;
    ``failed`` and ``dead`` say why. HTTP origins are ignored. Notices to
    one chat are sent one after another, in the order ``notify`` was
    called, so an acknowledgement never follows its transcript. Errors are
    the core's (see ``telegram.errors``).
    """

    def __init__(self, bot: Bot, *, max_messages: int = MAX_MESSAGES) -> None:
        if max_messages < 1:
            raise ValueError("max_messages must be at least 1")
        self.bot = bot
        self.max_messages = max_messages
        self._locks: dict[int, asyncio.Lock] = {}
        self._waiting: dict[int, int] = {}

    async def notify(self, job: Job, event: Event) -> None:
        """Send the notice for ``event`` to the job's chat; other origins are ignored."""
        origin = job.origin
        if origin.kind is not OriginKind.TELEGRAM or origin.chat_id is None:
            return
        chat_id = origin.chat_id
        message_id = origin.message_id
        async with self._turn(chat_id):
            if event is Event.DONE:
                await self._send_transcript(job, chat_id, message_id, _transcript(job))
            else:
                await self._send(chat_id, message_id, _notice(job, event))
        log.debug("telegram.notified", extra={"job_id": job.id, "event": event.value})

    async def _send_transcript(
        self, job: Job, chat_id: int, message_id: int | None, text: str
    ) -> None:
        """The transcript in messages, or one ``.txt`` document; SRT and VTT buttons under it."""
        parts = split_text(text)
        if not parts:
            await self._send(chat_id, message_id, EMPTY_TEXT)
            return
        buttons = transcript_buttons(job.id)
        if len(parts) <= self.max_messages:
            for number, part in enumerate(parts, 1):
                last = number == len(parts)
                await self._send(chat_id, message_id, part, buttons if last else None)
            return
        await send_document(
            self.bot,
            chat_id,
            message_id,
            filename=document_name(job, "txt"),
            body=text.encode("utf-8"),
            caption=caption_of(text),
            buttons=buttons,
        )

    async def _send(
        self,
        chat_id: int,
        message_id: int | None,
        text: str,
        buttons: InlineKeyboardMarkup | None = None,
    ) -> None:
        if message_id is None:
            with telegram_errors():
                await self.bot.send_message(chat_id, text, parse_mode=None, reply_markup=buttons)
            return
        await send_reply(self.bot, chat_id, message_id, text, buttons=buttons)

    @contextlib.asynccontextmanager
    async def _turn(self, chat_id: int) -> AsyncIterator[None]:
        """Hold the chat's lock; taken without yielding when free, so call order is kept."""
        lock = self._locks.setdefault(chat_id, asyncio.Lock())
        self._waiting[chat_id] = self._waiting.get(chat_id, 0) + 1
        try:
            async with lock:
                yield
        finally:
            self._waiting[chat_id] -= 1
            if not self._waiting[chat_id]:
                del self._waiting[chat_id]
                del self._locks[chat_id]


def _notice(job: Job, event: Event) -> str:
    if event is Event.ACCEPTED:
        return ACCEPTED_TEXT
    if event is Event.FAILED:
        return FAILED_TEXT.format(reason=job.error) if job.error else FAILED_NO_REASON
    return DEAD_TEXT.format(reason=job.error or "no reason recorded")


def caption_of(text: str, limit: int = CAPTION_CHARS) -> str:
    """A long transcript's first lines for its document's caption: whole words, then "…"."""
    head = text.strip()
    if len(head) <= limit:
        return head
    cut = head.rfind(" ", 0, limit)
    return head[: cut if cut > 0 else limit].rstrip() + "…"


def split_text(text: str, limit: int = MESSAGE_LIMIT) -> list[str]:
    """``text`` in pieces of at most ``limit`` UTF-16 code units, cut at a newline or space.

    A piece is cut at the last newline in its window, else the last
    whitespace, else at the limit (one very long word). Whitespace at the
    cuts is dropped; a blank text gives no pieces.
    """
    pieces: list[str] = []
    rest = text.strip()
    while rest:
        window = _fit(rest, limit)
        if len(window) == len(rest):
            pieces.append(rest)
            break
        cut = window.rfind("\n")
        if cut <= 0:
            cut = max((i for i, ch in enumerate(window) if ch.isspace()), default=-1)
        if cut <= 0:
            cut = len(window)
        pieces.append(rest[:cut].rstrip())
        rest = rest[cut:].lstrip()
    return pieces


def _fit(text: str, limit: int) -> str:
    """The longest prefix of ``text`` that is at most ``limit`` UTF-16 code units."""
    window = text[:limit]
    excess = _utf16_length(window) - limit
    while excess > 0:
        # A character is one or two units, so dropping ``excess // 2`` characters
        # (at least one) never cuts more than the longest prefix that fits needs.
        window = window[: len(window) - max(1, excess // 2)]
        excess = _utf16_length(window) - limit
    return window


def _utf16_length(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


def _transcript(job: Job) -> str:
    """The text a chat gets: with speakers, a paragraph per turn, ``Name: ...`` (SPEC §18)."""
    if not job.speakers:
        return job.text or ""
    names = {speaker.id: speaker.name for speaker in job.speakers}
    return plain_text(job.words, text=job.text or "", names=names).rstrip("\n")
