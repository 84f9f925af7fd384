"""``TelegramNotifier``: a job's outcome as replies to the message that brought its recording.

With a ``Standing`` (SPEC §21, ADR 51) it keeps one status message a job:
sent as the reply to the recording, edited as the job moves (queued with
its place, converting, recognising with the percent or the parts done),
then edited into the transcript's first message or the reason it failed.
Edits of one chat are paced by a budget in the database
(``policy.chat_pace``), at most one every ``CHAT_EDIT_INTERVAL`` whichever
process sends them. A progress edit that comes too soon is skipped (the
next one, or the end, shows more): in a busy group the transcripts are not
queued behind other recordings' progress. Any other edit that comes too
soon raises ``NotifierUnavailable`` with the wait, and the outbox tries it then.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator

import attrs
from aiogram import Bot
from aiogram.types import InlineKeyboardMarkup, LinkPreviewOptions, Message

from transcriber_adapters.telegram.buttons import document_name, send_document, transcript_buttons
from transcriber_adapters.telegram.client import send_reply
from transcriber_adapters.telegram.errors import MessageGone, MessageNotModified, telegram_errors
from transcriber_core.entities import Job, OriginKind, State
from transcriber_core.errors import NotifierUnavailable
from transcriber_core.policy import CHAT_EDIT_INTERVAL, chat_pace
from transcriber_core.ports import BudgetStore, Event, Standing
from transcriber_core.rendering import TranscriptFormat, render
from transcriber_core.summaries import Summary, SummaryState

log = logging.getLogger("transcriber.telegram")

#: Telegram's limit for one message, counted in UTF-16 code units.
MESSAGE_LIMIT = 4096
#: A transcript needing more messages than this goes as one ``.txt`` document.
MAX_MESSAGES = 3

ACCEPTED_TEXT = "Got it, transcribing. This message will show how it goes, then the text."
EMPTY_TEXT = "Done, but no speech was recognised in this recording."
#: How much of a long transcript its document's caption shows, in characters.
CAPTION_CHARS = 300
FAILED_TEXT = "Could not transcribe this recording: {reason}"
FAILED_NO_REASON = "Could not transcribe this recording."
DEAD_TEXT = (
    "Sorry, I gave up on this recording after repeated errors. "
    "Please send it again later.\n({reason})"
)
#: The status message's texts, by where the job stands (SPEC §21).
QUEUED_TEXT = "Got it. Queued: {ahead} ahead of it."
CONVERTING_TEXT = "Converting the recording…"
FETCHING_TEXT = "Downloading the recording from the link…"
RECOGNISING_TEXT = "Recognising…"
RECOGNISING_PERCENT_TEXT = "Recognising… {percent} %"
LEFT_TEXT = ", about {left} left"
RECOGNISING_PARTS_TEXT = "Recognising: {done} of {total} parts done."
LONG_TEXT = "Done. The transcript is long, so it comes as a file."


class TelegramNotifier:
    """Replies in the job's chat to the message that brought the recording.

    ``accepted`` is a short acknowledgement; ``done`` is the transcript, split
    into messages of at most 4,096 characters on line or word boundaries, or
    one UTF-8 ``.txt`` document (named by the job's date and id, its first
    lines as the caption) when it would take more than ``max_messages``,
    with SRT and VTT buttons under the last message or the document;
    ``failed`` and ``dead`` say why. Given a ``Standing`` (the outbox always
    gives one) these are shown in the job's one status message instead,
    edited as the job moves (module docstring). HTTP origins are ignored.
    Notices to one chat are sent one after another, in the order ``notify``
    was called, so an acknowledgement never follows its transcript. Errors
    are the core's (see ``telegram.errors``).
    """

    def __init__(
        self,
        bot: Bot,
        *,
        max_messages: int = MAX_MESSAGES,
        budgets: BudgetStore | None = None,
        summaries: bool = False,
    ) -> None:
        if max_messages < 1:
            raise ValueError("max_messages must be at least 1")
        self.bot = bot
        self.max_messages = max_messages
        #: Where each chat's edit pace is kept; None: edits are not paced (tests).
        self.budgets = budgets
        #: ``[llm]`` is configured: a Summary button goes under each transcript (ADR 92).
        self.summaries = summaries
        self._locks: dict[int, asyncio.Lock] = {}
        self._waiting: dict[int, int] = {}

    async def notify(
        self, job: Job, event: Event, *, standing: Standing | None = None
    ) -> int | None:
        """Send the notice for ``event`` to the job's chat; other origins are ignored.

        With ``standing``, the job's status message is sent or edited and its
        id is the answer; without, every notice is a message of its own.
        """
        origin = job.origin
        if origin.kind is not OriginKind.TELEGRAM or origin.chat_id is None:
            return None
        chat_id = origin.chat_id
        message_id = origin.message_id
        shown = None
        async with self._turn(chat_id):
            if standing is not None:
                shown = await self._keep_status(job, chat_id, event, standing)
            elif event is Event.DONE:
                await self._send_transcript(job, chat_id, message_id, _transcript(job))
            elif event is not Event.PROGRESS:
                await self._send(chat_id, message_id, _notice(job, event))
        log.debug("telegram.notified", extra={"job_id": job.id, "event": event.value})
        return shown

    async def send_summary(self, job: Job, summary: Summary) -> None:
        """The summary as a reply to the recording (its labels in the recording's language)."""
        origin = job.origin
        if origin.kind is not OriginKind.TELEGRAM or origin.chat_id is None:
            return
        async with self._turn(origin.chat_id):
            for part in split_text(summary_text(summary, job.language)):
                await self._send(origin.chat_id, origin.message_id, part)
        log.debug("telegram.summary_sent", extra={"job_id": job.id})

    def _buttons(self, job: Job) -> InlineKeyboardMarkup:
        """SRT and VTT under a transcript; Summary too when summaries are offered."""
        label = summary_labels(job.language).button if self.summaries else None
        return transcript_buttons(job.id, summary=label)

    async def _keep_status(self, job: Job, chat_id: int, event: Event, standing: Standing) -> int:
        """Show ``event`` in the job's status message (sent or edited); its id."""
        reply = job.origin.message_id
        status = standing.message_id
        if event is not Event.DONE:
            text = status_text(job, standing, event) if event in _MOVING else _notice(job, event)
            skippable = event is Event.PROGRESS
            return await self._show(chat_id, reply, status, text, skippable=skippable)
        text = _transcript(job)
        parts = split_text(text)
        if len(parts) > self.max_messages:
            shown = await self._show(chat_id, reply, status, LONG_TEXT)
            await self._send_document(job, chat_id, reply, text)
            return shown
        if not parts:
            return await self._show(chat_id, reply, status, EMPTY_TEXT)
        buttons = self._buttons(job)
        last = len(parts) - 1
        shown = await self._show(chat_id, reply, status, parts[0], buttons if not last else None)
        for number, part in enumerate(parts[1:], 1):
            await self._send(chat_id, reply, part, buttons if number == last else None)
        return shown

    async def _show(
        self,
        chat_id: int,
        reply: int | None,
        status: int | None,
        text: str,
        buttons: InlineKeyboardMarkup | None = None,
        *,
        skippable: bool = False,
    ) -> int:
        """Edit the status message to ``text``, or send it when there is none (or it is gone).

        ``skippable``: an edit the chat's pace refuses is left out, not retried.
        """
        if status is not None:
            if not await self._pace(chat_id, skippable=skippable):
                log.debug("telegram.progress_skipped")
                return status
            try:
                with telegram_errors():
                    await self.bot.edit_message_text(
                        text,
                        chat_id=chat_id,
                        message_id=status,
                        parse_mode=None,
                        link_preview_options=LinkPreviewOptions(is_disabled=True),
                        reply_markup=buttons,
                    )
            except MessageNotModified:
                return status  # a retried edit: it already says so
            except MessageGone:
                # Deleted in the chat, or too old to edit: a new status message instead.
                log.info("telegram.status_gone")
            else:
                return status
        return (await self._send(chat_id, reply, text, buttons)).message_id

    async def _pace(self, chat_id: int, *, skippable: bool = False) -> bool:
        """Take the chat's edit token: True; without one, False if ``skippable``, else raise.

        The refusal is ``NotifierUnavailable`` with the wait (ADR 51).
        """
        if self.budgets is None:
            return True
        wait = await self.budgets.take(chat_pace(chat_id), capacity=1, per=CHAT_EDIT_INTERVAL)
        if wait is None:
            return True
        if skippable:
            return False
        raise NotifierUnavailable(
            "the chat's status message was edited moments ago", retry_after=wait
        )

    async def _send_transcript(
        self, job: Job, chat_id: int, message_id: int | None, text: str
    ) -> None:
        """The transcript in messages, or one ``.txt`` document; SRT and VTT buttons under it."""
        parts = split_text(text)
        if not parts:
            await self._send(chat_id, message_id, EMPTY_TEXT)
            return
        buttons = self._buttons(job)
        if len(parts) <= self.max_messages:
            for number, part in enumerate(parts, 1):
                last = number == len(parts)
                await self._send(chat_id, message_id, part, buttons if last else None)
            return
        await self._send_document(job, chat_id, message_id, text)

    async def _send_document(
        self, job: Job, chat_id: int, message_id: int | None, text: str
    ) -> None:
        """The transcript as one dated ``.txt``, its opening as the caption, SRT/VTT under it."""
        await send_document(
            self.bot,
            chat_id,
            message_id,
            filename=document_name(job, "txt"),
            body=text.encode("utf-8"),
            caption=caption_of(text),
            buttons=self._buttons(job),
        )

    async def _send(
        self,
        chat_id: int,
        message_id: int | None,
        text: str,
        buttons: InlineKeyboardMarkup | None = None,
    ) -> Message:
        if message_id is None:
            with telegram_errors():
                return await self.bot.send_message(
                    chat_id, text, parse_mode=None, reply_markup=buttons
                )
        return await send_reply(self.bot, chat_id, message_id, text, buttons=buttons)

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


#: The events whose status text says where the job stands, not how it ended.
_MOVING = frozenset({Event.ACCEPTED, Event.PROGRESS})


def status_text(job: Job, standing: Standing, event: Event = Event.PROGRESS) -> str:
    """What the status message says while the job runs (SPEC §21).

    A job in check is being recognised whatever its place (it waits for a
    poll, not for a worker); one waiting in convert or recognize is queued.
    """
    waiting = job.state is not State.CHECK and standing.queue_position is not None
    if waiting and standing.queue_position:
        return QUEUED_TEXT.format(ahead=standing.queue_position)
    if job.state is State.FETCH:
        # A link (SPEC §28): taken, then downloading.
        return ACCEPTED_TEXT if event is Event.ACCEPTED else FETCHING_TEXT
    if job.state is State.CONVERT:
        # Next in line: the acknowledgement says it is taken, a later edit that it converts.
        return ACCEPTED_TEXT if event is Event.ACCEPTED else CONVERTING_TEXT
    if standing.parts_total:
        return RECOGNISING_PARTS_TEXT.format(
            done=standing.parts_done or 0, total=standing.parts_total
        )
    if standing.percent is None:
        return RECOGNISING_TEXT
    text = RECOGNISING_PERCENT_TEXT.format(percent=standing.percent)
    if standing.eta_seconds is not None:
        text += LEFT_TEXT.format(left=_length(standing.eta_seconds))
    return text


def _length(seconds: float) -> str:
    """Seconds as ``m:ss`` (``h:mm:ss`` from an hour)."""
    whole = round(seconds)
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


def _notice(job: Job, event: Event) -> str:
    if event is Event.ACCEPTED:
        return ACCEPTED_TEXT
    if event is Event.FAILED:
        return FAILED_TEXT.format(reason=job.error) if job.error else FAILED_NO_REASON
    return DEAD_TEXT.format(reason=job.error or "no reason recorded")


@attrs.frozen
class SummaryLabels:
    """The headings of a summary sent to a chat, in one language."""

    title: str
    #: The button under a transcript that asks for its summary.
    button: str
    points: str
    actions: str
    failed: str


#: By the recording's language (the summary's own is the transcript's); English otherwise.
SUMMARY_LABELS = {
    "en": SummaryLabels(
        title="Summary",
        button="Summary",
        points="Key points",
        actions="Action items",
        failed="Could not summarise this recording: {reason}",
    ),
    "ru": SummaryLabels(
        title="Краткое содержание",
        button="Кратко",
        points="Главное",
        actions="Задачи",
        failed="Не удалось составить краткое содержание записи: {reason}",  # noqa: RUF001
    ),
}


def summary_labels(language: str | None) -> SummaryLabels:
    """The headings for a recording in ``language``; English for any other."""
    return SUMMARY_LABELS.get(language or "", SUMMARY_LABELS["en"])


def summary_text(summary: Summary, language: str | None) -> str:
    """A done summary as a chat reads it (paragraph, key points, action items and who); a
    failed one's reason."""
    labels = summary_labels(language)
    if summary.state is not SummaryState.DONE:
        return labels.failed.format(reason=summary.error or "-")
    blocks = [f"{labels.title}\n{summary.text or ''}".rstrip()]
    if summary.points:
        blocks.append("\n".join([labels.points, *(f"• {point}" for point in summary.points)]))
    if summary.actions:
        items = [f"• {a.who}: {a.text}" if a.who else f"• {a.text}" for a in summary.actions]
        blocks.append("\n".join([labels.actions, *items]))
    return "\n\n".join(blocks)


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
    return render(job, TranscriptFormat.TXT).decode().rstrip("\n")
