"""Webhook mode: Telegram posts each update to ``POST /telegram/webhook`` of any API process.

``start`` checks the token and calls ``setWebhook`` (with the secret and the
updates the bot handles); the route checks the secret header and hands the
update to the same dispatcher as polling. The answer (200) comes after the
intake committed, as polling's offset does (ADR 53): a process killed
mid-download answers nothing, and Telegram delivers the update again, to
this process or another; a re-delivered recording is known by its chat and
message.
"""

from __future__ import annotations

import asyncio
import hmac
import logging
from datetime import timedelta
from typing import Any

from aiogram import Bot, Dispatcher

from transcriber_adapters.telegram import get_me, parse_update, set_webhook

log = logging.getLogger("transcriber.bot")

_GET_ME_TIMEOUT = timedelta(seconds=10)


class Stopping(Exception):  # noqa: N818 - a state, not a failure
    """The service is stopping: the update is not taken, and Telegram sends it again."""


class BotWebhook:
    """The bot in webhook mode: ``setWebhook`` at start, updates through ``handle``."""

    def __init__(self, bot: Bot, dispatcher: Dispatcher, *, url: str, secret: str) -> None:
        self.bot = bot
        self.dispatcher = dispatcher
        #: The public URL of ``/telegram/webhook`` given to Telegram.
        self.url = url
        self._secret = secret.encode()
        self._stopping = False
        self._inflight: set[asyncio.Task[Any]] = set()

    async def start(self) -> None:
        """Check the token, then tell Telegram where to post; raises what Telegram refuses.

        A rejected token raises ``TokenRejected``; an unreachable Telegram
        ``TelegramUnavailable``, which stops the start: without ``setWebhook``
        no update would come.
        """
        me = await get_me(self.bot, answer_within=_GET_ME_TIMEOUT)
        await set_webhook(self.bot, self.url, secret=self._secret.decode())
        log.info("bot.webhook_set", extra={"bot_id": me.id})

    def accepts(self, secret: str | None) -> bool:
        """True when ``secret`` (the header's value) is the configured one; constant time."""
        return secret is not None and hmac.compare_digest(secret.encode(), self._secret)

    async def handle(self, data: object) -> None:
        """Hand one posted update to the dispatcher and return once its intake finished.

        Raises ``ValueError`` for a body that is not an update and ``Stopping``
        once the service stops taking updates.
        """
        if self._stopping:
            raise Stopping
        update = parse_update(self.bot, data)
        # A task of its own: a caller that hangs up does not cut the intake off, and
        # ``stop`` cancels it after the grace without cancelling the HTTP server's task.
        task = asyncio.create_task(self.dispatcher.feed_update(self.bot, update))
        self._inflight.add(task)
        task.add_done_callback(self._inflight.discard)
        await asyncio.wait({task})
        if task.cancelled():
            raise Stopping
        error = task.exception()
        if error is not None:
            # Answered 200 all the same: a failing update must not come back forever.
            # No traceback: it may quote the update, names and all (reference: Privacy).
            log.error("bot.update_failed", extra={"error_type": type(error).__name__})

    async def stop(self, grace: float) -> None:
        """Take no more updates; let those being handled finish for ``grace`` s, then cancel.

        The webhook stays set: another API process (or this one, restarted)
        takes the next updates, and Telegram retries what was not answered.
        """
        self._stopping = True
        inflight = set(self._inflight)
        if inflight:
            _, pending = await asyncio.wait(inflight, timeout=grace)
            for handling in pending:
                handling.cancel()
        log.info("bot.stopped")

    async def close(self) -> None:
        """Close the bot's HTTP session; after the workers drained, as the notifier uses it."""
        await self.bot.session.close()
