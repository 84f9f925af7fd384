"""Telegram through aiogram: the notifier adapter, downloads of what users send, the ``Bot``.

Everything here talks to the Bot API or reads its payloads (``messages``:
which recording a message carries). What the bot does with a recording is
an entry point and lives in the app (``transcriber_app.bot``).
"""

from transcriber_adapters.telegram.buttons import (
    FORMATS,
    answer_button,
    document_name,
    send_document,
    summary_button,
    transcript_button,
    transcript_buttons,
)
from transcriber_adapters.telegram.client import (
    ALLOWED_UPDATES,
    CLOUD_DOWNLOAD_LIMIT,
    LOCAL_DOWNLOAD_LIMIT,
    delete_webhook,
    download_limit,
    get_me,
    get_updates,
    is_chat_admin,
    make_bot,
    parse_update,
    reply_to,
    send_reply,
    set_webhook,
)
from transcriber_adapters.telegram.errors import (
    FileTooLarge,
    TelegramRefused,
    TelegramUnavailable,
    TokenRejected,
    telegram_errors,
)
from transcriber_adapters.telegram.files import download_file
from transcriber_adapters.telegram.messages import Recording, recording_of
from transcriber_adapters.telegram.notifier import MESSAGE_LIMIT, TelegramNotifier, split_text

__all__ = [
    "ALLOWED_UPDATES",
    "CLOUD_DOWNLOAD_LIMIT",
    "FORMATS",
    "LOCAL_DOWNLOAD_LIMIT",
    "MESSAGE_LIMIT",
    "FileTooLarge",
    "Recording",
    "TelegramNotifier",
    "TelegramRefused",
    "TelegramUnavailable",
    "TokenRejected",
    "answer_button",
    "delete_webhook",
    "document_name",
    "download_file",
    "download_limit",
    "get_me",
    "get_updates",
    "is_chat_admin",
    "make_bot",
    "parse_update",
    "recording_of",
    "reply_to",
    "send_document",
    "send_reply",
    "set_webhook",
    "split_text",
    "summary_button",
    "telegram_errors",
    "transcript_button",
    "transcript_buttons",
]
