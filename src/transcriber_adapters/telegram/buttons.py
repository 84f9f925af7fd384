"""The inline buttons under a transcript, and the documents it goes out as (SPEC §21).

A button's ``callback_data`` carries the format and the job id, nothing
else: any API process, after any restart, answers it from the job database.
Documents are named by the job's date and the start of its id, never by
anything the sender chose.
"""

from __future__ import annotations

import re

from aiogram import Bot
from aiogram.types import BufferedInputFile, InlineKeyboardButton, InlineKeyboardMarkup

from transcriber_adapters.telegram.client import reply_to
from transcriber_adapters.telegram.errors import telegram_errors
from transcriber_core.entities import Job

#: What starts a transcript button's data: ``tx:<format>:<job id>`` (at most 64 bytes).
_PREFIX = "tx"
#: What a Summary button's data is: ``sm:<job id>``.
_SUMMARY_PREFIX = "sm"
#: A job id as the service makes them; anything else never reaches the database.
_JOB_ID = re.compile(r"[A-Za-z0-9_-]{1,58}")
#: The formats a button sends, by the label it shows.
FORMATS = {"SRT": "srt", "VTT": "vtt"}


def transcript_buttons(job_id: str, *, summary: str | None = None) -> InlineKeyboardMarkup:
    """A row of buttons: the transcript as SRT, as VTT; with ``summary`` (its label), a second
    row asking for the recording's summary (ADR 92)."""
    rows = [
        [
            InlineKeyboardButton(text=label, callback_data=f"{_PREFIX}:{fmt}:{job_id}")
            for label, fmt in FORMATS.items()
        ]
    ]
    if summary is not None:
        rows.append(
            [InlineKeyboardButton(text=summary, callback_data=f"{_SUMMARY_PREFIX}:{job_id}")]
        )
    return InlineKeyboardMarkup(inline_keyboard=rows)


def summary_button(data: str | None) -> str | None:
    """The job id a Summary button's data asks for; None for data of no such button."""
    prefix, _, job_id = (data or "").partition(":")
    return job_id if prefix == _SUMMARY_PREFIX and _JOB_ID.fullmatch(job_id) else None


def transcript_button(data: str | None) -> tuple[str, str] | None:
    """The (format, job id) a button's data asks for; None for data of no such button."""
    if data is None:
        return None
    prefix, _, rest = data.partition(":")
    fmt, _, job_id = rest.partition(":")
    if prefix != _PREFIX or fmt not in FORMATS.values() or not _JOB_ID.fullmatch(job_id):
        return None
    return fmt, job_id


def document_name(job: Job, extension: str) -> str:
    """``transcript-<YYYY-MM-DD>-<first 8 of the id>.<extension>``: the job's date, no names."""
    safe_id = "".join(ch for ch in job.id[:8] if ch.isalnum() or ch in "-_")
    return f"transcript-{job.created:%Y-%m-%d}-{safe_id}.{extension}"


async def send_document(
    bot: Bot,
    chat_id: int,
    message_id: int | None,
    *,
    filename: str,
    body: bytes,
    caption: str | None = None,
    buttons: InlineKeyboardMarkup | None = None,
) -> None:
    """Send ``body`` as a document named ``filename``, replying to ``message_id`` if given."""
    with telegram_errors():
        await bot.send_document(
            chat_id,
            BufferedInputFile(body, filename=filename),
            caption=caption,
            parse_mode=None,
            reply_parameters=None if message_id is None else reply_to(message_id),
            reply_markup=buttons,
        )


async def answer_button(bot: Bot, query_id: str, text: str | None = None) -> None:
    """``answerCallbackQuery``: the client stops its spinner (and shows ``text``, if any)."""
    with telegram_errors():
        await bot.answer_callback_query(query_id, text=text)
