"""Telegram through aiogram: the notifier adapter, downloads of what users send, the ``Bot``.

The bot's handlers are an entry point and live in the app
(``transcriber_app.bot``); everything here only talks to the Bot API.
"""

from transcriber_adapters.telegram.client import (
    CLOUD_DOWNLOAD_LIMIT,
    LOCAL_DOWNLOAD_LIMIT,
    download_limit,
    make_bot,
    reply_to,
    send_reply,
)
from transcriber_adapters.telegram.errors import (
    FileTooLarge,
    TelegramRefused,
    TelegramUnavailable,
    telegram_errors,
)
from transcriber_adapters.telegram.files import download_file
from transcriber_adapters.telegram.notifier import MESSAGE_LIMIT, TelegramNotifier, split_text

__all__ = [
    "CLOUD_DOWNLOAD_LIMIT",
    "LOCAL_DOWNLOAD_LIMIT",
    "MESSAGE_LIMIT",
    "FileTooLarge",
    "TelegramNotifier",
    "TelegramRefused",
    "TelegramUnavailable",
    "download_file",
    "download_limit",
    "make_bot",
    "reply_to",
    "send_reply",
    "split_text",
    "telegram_errors",
]
