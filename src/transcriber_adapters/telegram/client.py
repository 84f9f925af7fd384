"""Making the aiogram ``Bot`` for the cloud Bot API or a local Bot API server, and replying."""

from __future__ import annotations

import asyncio
from datetime import timedelta

from aiogram import Bot
from aiogram.client.session.aiohttp import AiohttpSession
from aiogram.client.telegram import TelegramAPIServer
from aiogram.enums import ChatMemberStatus
from aiogram.exceptions import TelegramUnauthorizedError
from aiogram.methods import GetUpdates
from aiogram.types import (
    InlineKeyboardMarkup,
    LinkPreviewOptions,
    Message,
    ReplyParameters,
    Update,
    User,
)
from aiogram.utils.token import TokenValidationError, validate_token
from pydantic import ValidationError

from transcriber_adapters.telegram.errors import TokenRejected, telegram_errors

#: The most a bot may download from the cloud Bot API (reference: Telegram bot).
CLOUD_DOWNLOAD_LIMIT = 20 * 1024 * 1024
#: The most we download through a local Bot API server, which has no limit of its own.
LOCAL_DOWNLOAD_LIMIT = 2000 * 1024 * 1024


def make_bot(token: str, api_base: str = "") -> Bot:
    """A ``Bot`` for ``token``, talking to ``api_base`` (a local Bot API server) or the cloud.

    A malformed token raises ``ValueError`` without repeating it. The session
    is never in aiogram's ``is_local`` mode: a local server's absolute file
    paths are read from disk by ``download_file`` itself, so the same bot
    works whether or not it shares a disk with the server.
    """
    try:
        validate_token(token)
    except TokenValidationError:
        raise ValueError("the Telegram bot token is malformed") from None
    if not api_base:
        return Bot(token)
    server = TelegramAPIServer.from_base(api_base, is_local=False)
    return Bot(token, session=AiohttpSession(api=server))


async def get_me(bot: Bot, *, answer_within: timedelta) -> User:
    """The bot's own account, asked of Telegram within ``answer_within``.

    Raises ``TokenRejected`` when Telegram refuses the token and
    ``TelegramUnavailable`` when it does not answer in time (or at all).
    """
    with telegram_errors():
        try:
            async with asyncio.timeout(answer_within.total_seconds()):
                return await bot.me()
        except TelegramUnauthorizedError:
            raise TokenRejected from None


def download_limit(api_base: str) -> int:
    """The largest file the bot accepts: 20 MB from the cloud, 2,000 MB through a local server."""
    return LOCAL_DOWNLOAD_LIMIT if api_base else CLOUD_DOWNLOAD_LIMIT


async def send_reply(
    bot: Bot,
    chat_id: int,
    message_id: int,
    text: str,
    *,
    buttons: InlineKeyboardMarkup | None = None,
) -> Message:
    """Send ``text`` as plain text replying to a message, even if that message is gone.

    No parse mode and no link preview, whatever the bot's defaults: a
    transcript is shown as spoken, ``<`` and links included.
    """
    with telegram_errors():
        return await bot.send_message(
            chat_id,
            text,
            parse_mode=None,
            link_preview_options=LinkPreviewOptions(is_disabled=True),
            reply_parameters=reply_to(message_id),
            reply_markup=buttons,
        )


def reply_to(message_id: int) -> ReplyParameters:
    """Reply parameters that still deliver when the message replied to was deleted."""
    return ReplyParameters(message_id=message_id, allow_sending_without_reply=True)


async def get_updates(
    bot: Bot, *, offset: int | None, wait_seconds: int, allowed_updates: list[str] | None = None
) -> list[Update]:
    """The updates from ``offset`` on, waiting up to ``wait_seconds`` for one; confirms those below.

    Telegram forgets every update below ``offset`` when it is asked: the
    caller moves it only past updates whose intake has committed (ADR 53).
    """
    method = GetUpdates(
        offset=offset, timeout=wait_seconds, allowed_updates=allowed_updates or ALLOWED_UPDATES
    )
    # The HTTP request must outlive the long poll it carries.
    request_timeout = int(bot.session.timeout + wait_seconds) if bot.session.timeout else None
    with telegram_errors():
        return await bot(method, request_timeout=request_timeout)


#: The updates the bot handles; Telegram sends no others.
ALLOWED_UPDATES = ["message", "callback_query"]


async def set_webhook(bot: Bot, url: str, *, secret: str) -> None:
    """Have Telegram post updates to ``url`` with ``secret`` in each request's header."""
    with telegram_errors():
        await bot.set_webhook(url, secret_token=secret, allowed_updates=ALLOWED_UPDATES)


def parse_update(bot: Bot, data: object) -> Update:
    """An update posted to the webhook, bound to ``bot``; ``ValueError`` when it is not one."""
    try:
        return Update.model_validate(data, context={"bot": bot})
    except ValidationError:
        raise ValueError("not a Telegram update") from None


#: The chat member statuses that may change a group's settings.
_ADMIN_STATUSES = (ChatMemberStatus.CREATOR, ChatMemberStatus.ADMINISTRATOR)


async def is_chat_admin(bot: Bot, chat_id: int, user_id: int) -> bool:
    """True when ``user_id`` is the creator or an administrator of ``chat_id`` (getChatMember)."""
    with telegram_errors():
        member = await bot.get_chat_member(chat_id, user_id)
    return member.status in _ADMIN_STATUSES


async def delete_webhook(bot: Bot) -> None:
    """Take back a webhook an earlier webhook-mode start set: getUpdates refuses (409) while one is.

    Updates Telegram holds stay pending, for the next getUpdates.
    """
    with telegram_errors():
        await bot.delete_webhook(drop_pending_updates=False)
