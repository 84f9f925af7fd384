"""The one place where aiogram's and aiohttp's exceptions become the core's errors.

Their messages are dropped and never chained: an aiohttp error names the URL,
and a Bot API URL carries the bot token and the file's path (reference: Privacy)::

    TranscriberError
    ├── TransientError
    │   └── NotifierUnavailable
    │       └── TelegramUnavailable   network, timeout, 5xx, 429: try again later
    ├── TelegramRefused           4xx: blocked bot, gone chat, bad request
    │   ├── TokenRejected         401 to getMe: the configured token is not a bot's
    │   ├── MessageNotModified    an edit to the text the message already has
    │   └── MessageGone           an edit of a message that is gone or too old to edit
    └── FileTooLarge              more bytes than the bot may download
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from datetime import timedelta

import aiohttp
from aiogram.exceptions import (
    AiogramError,
    ClientDecodeError,
    TelegramAPIError,
    TelegramBadRequest,
    TelegramEntityTooLarge,
    TelegramNetworkError,
    TelegramRetryAfter,
    TelegramServerError,
)

from transcriber_core.errors import NotifierUnavailable, TranscriberError

#: How the Bot API says a file is past its download limit (cloud: 20 MB).
_TOO_BIG = "file is too big"
#: How it says an edit changes nothing ...
_NOT_MODIFIED = "message is not modified"
#: ... and that the message cannot be edited: deleted, or not the bot's, or too old.
_GONE = ("message to edit not found", "message can't be edited")


class TelegramUnavailable(NotifierUnavailable):
    """Telegram did not answer; the request may succeed later."""


class TelegramRefused(TranscriberError):  # noqa: N818
    """Telegram refused the request: the chat is gone, the bot is blocked, or it was malformed."""


class TokenRejected(TelegramRefused):
    """Telegram rejected the bot token ([telegram] token)."""


class MessageNotModified(TelegramRefused):
    """The message already says that: an edit repeated after a retry."""


class MessageGone(TelegramRefused):
    """The message to edit is gone (deleted) or can no longer be edited."""


class FileTooLarge(TranscriberError):  # noqa: N818
    """The file is larger than this bot may download."""


@contextlib.contextmanager
def telegram_errors() -> Iterator[None]:
    """Translate what aiogram and aiohttp raise inside the block into the errors above."""
    try:
        yield
    except TelegramRetryAfter as exc:
        raise TelegramUnavailable(
            f"Telegram asked to wait {exc.retry_after} s",
            retry_after=timedelta(seconds=exc.retry_after),
        ) from None
    except TelegramEntityTooLarge:
        raise TelegramRefused("Telegram refused a request that was too large") from None
    except (TelegramNetworkError, TelegramServerError, ClientDecodeError):
        raise TelegramUnavailable("Telegram did not answer as expected") from None
    except TelegramBadRequest as exc:
        said = exc.message.lower()
        if _TOO_BIG in said:
            raise FileTooLarge from None
        if _NOT_MODIFIED in said:
            raise MessageNotModified from None
        if any(gone in said for gone in _GONE):
            raise MessageGone from None
        raise TelegramRefused("Telegram refused the request as malformed") from None
    except TelegramAPIError as exc:
        raise TelegramRefused(f"Telegram refused the request ({type(exc).__name__})") from None
    except AiogramError:
        raise TelegramRefused("the Telegram client could not make the request") from None
    except (aiohttp.ClientError, TimeoutError):
        raise TelegramUnavailable("the connection to Telegram failed") from None
