"""Long polling as a task of the service: started after the workers, stopped with the intakes.

``start`` checks the token and polls in the background, ``stop(grace)``
takes no more updates and lets downloads finish, ``close`` closes the bot's
session after the workers drained (the notifier sends through it until then).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from datetime import timedelta
from typing import Any

from aiogram import Bot, Dispatcher
from aiogram.types import TelegramObject

from transcriber_adapters.telegram import TelegramUnavailable, get_me
from transcriber_core.errors import TranscriberError

log = logging.getLogger("transcriber.bot")

#: How long a getMe may take before Telegram counts as unreachable for now.
_GET_ME_TIMEOUT = timedelta(seconds=10)
#: Longest wait between attempts to reach Telegram before polling starts.
_MAX_RETRY_DELAY = 60.0

Handler = Callable[[TelegramObject, dict[str, Any]], Awaitable[Any]]


class BotPolling:
    """Long polling as a task of the service, stopped by the service, never by a signal.

    aiogram gets ``handle_signals=False`` and ``close_bot_session=False``:
    the service owns SIGTERM, and the notifier keeps sending through the
    bot's session until the workers have drained.
    """

    def __init__(
        self,
        bot: Bot,
        dispatcher: Dispatcher,
        *,
        polling_timeout: int = 30,
        concurrency: int = 8,
        retry_delay: float = 1.0,
    ) -> None:
        self.bot = bot
        self.dispatcher = dispatcher
        #: Seconds one getUpdates call waits for news.
        self.polling_timeout = polling_timeout
        #: Updates handled at once: bounds parallel downloads.
        self.concurrency = concurrency
        #: First wait before trying Telegram again when it cannot be reached at start.
        self.retry_delay = retry_delay
        self._task: asyncio.Task[None] | None = None
        self._stopping = asyncio.Event()
        self._polling = asyncio.Event()
        self._inflight: set[asyncio.Task[Any]] = set()
        dispatcher.update.outer_middleware(self._track)
        dispatcher.startup.register(self._on_startup)

    async def start(self) -> None:
        """Check the token with Telegram, then poll in the background; returns at once.

        A rejected token raises ``TokenRejected``. When Telegram cannot be
        reached the service starts anyway and polling begins once it can.
        """
        if self._task is not None:
            raise RuntimeError("the bot is already polling")
        try:
            me = await get_me(self.bot, answer_within=_GET_ME_TIMEOUT)
            log.info("bot.started", extra={"bot_id": me.id})
        except TelegramUnavailable as exc:
            log.warning("bot.unreachable", extra={"error_type": type(exc).__name__})
        self._task = asyncio.create_task(self._run(), name="transcriber-bot")

    async def stop(self, grace: float) -> None:
        """Take no more updates; let recordings being received finish for ``grace`` s, then cancel.

        A cancelled download leaves no file and no job, and its sender is
        asked to send the recording again (aiogram has already confirmed the
        update to Telegram, so it would not come back by itself).
        """
        task = self._task
        if task is None:
            return
        self._stopping.set()
        if not self._polling.is_set():
            # Still looking for Telegram (a getMe may hang until its timeout): nothing
            # has been taken yet, so cancelling loses nothing.
            task.cancel()
        elif not task.done():
            with contextlib.suppress(RuntimeError):  # polling ended on its own meanwhile
                await self.dispatcher.stop_polling()
        await asyncio.gather(task, return_exceptions=True)
        inflight = set(self._inflight)
        if inflight:
            _, pending = await asyncio.wait(inflight, timeout=grace)
            for handling in pending:
                handling.cancel()
            await asyncio.gather(*inflight, return_exceptions=True)
        log.info("bot.stopped")

    async def close(self) -> None:
        """Close the bot's HTTP session; after the workers drained, as the notifier uses it."""
        await self.bot.session.close()

    async def _run(self) -> None:
        if not await self._reach_telegram():
            return
        try:
            await self.dispatcher.start_polling(
                self.bot,
                polling_timeout=self.polling_timeout,
                handle_signals=False,
                close_bot_session=False,
                tasks_concurrency_limit=self.concurrency,
            )
        except Exception as exc:
            # aiogram retries failed polls itself; this is a bug, and the bot is off.
            log.exception("bot.polling_failed", extra={"error_type": type(exc).__name__})
            raise

    async def _on_startup(self) -> None:
        """Called by aiogram once polling holds its lock: from now on ``stop_polling`` works."""
        self._polling.set()

    async def _reach_telegram(self) -> bool:
        """Ask getMe until it answers (aiogram's polling needs it); False when told to stop."""
        delay = self.retry_delay
        while not self._stopping.is_set():
            try:
                await get_me(self.bot, answer_within=_GET_ME_TIMEOUT)
            except TranscriberError as exc:
                log.warning(
                    "bot.unreachable",
                    extra={"error_type": type(exc).__name__, "retry_seconds": delay},
                )
            else:
                return True
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(delay):
                    await self._stopping.wait()
            delay = min(delay * 2, _MAX_RETRY_DELAY)
        return False

    async def _track(self, handler: Handler, event: TelegramObject, data: dict[str, Any]) -> Any:
        task = asyncio.current_task()
        if task is not None:
            self._inflight.add(task)
        try:
            return await handler(event, data)
        finally:
            if task is not None:
                self._inflight.discard(task)
