"""Long polling as a task of the service: started after the workers, stopped with the intakes.

``start`` checks the token and polls in the background, ``stop(grace)``
takes no more updates and lets downloads finish, ``close`` closes the bot's
session after the workers drained (the notifier sends through it until then).

The loop is ours, not aiogram's ``start_polling``: aiogram confirms an
update (the next getUpdates' ``offset``) as soon as it has read it, so a
recording being downloaded when the process is killed was lost. Here the
offset moves only past updates whose intake has finished, a job committed or
the update answered (ADR 53); a restart reads the rest again, and the intake
knows a recording it already took by its chat and message.

With a ``ChatStore`` (every service has one: the job database), only the
process holding the polling lease polls; the others wait and take over
within ``lease`` of the holder's death (ADR 53).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from datetime import timedelta

from aiogram import Bot, Dispatcher
from aiogram.types import Update

from transcriber_adapters.telegram import (
    TelegramUnavailable,
    delete_webhook,
    get_me,
    get_updates,
)
from transcriber_core.entities import PollLease
from transcriber_core.errors import TranscriberError
from transcriber_core.ports import ChatStore

log = logging.getLogger("transcriber.bot")

#: How long a getMe may take before Telegram counts as unreachable for now.
_GET_ME_TIMEOUT = timedelta(seconds=10)
#: Longest wait between attempts to reach Telegram.
_MAX_RETRY_DELAY = 60.0
#: How long the confirming getUpdates at a clean stop may take.
_CONFIRM_SECONDS = 3.0
#: How long the polling lease lasts unrenewed: a dead holder is replaced within it
#: and one renewal period (SPEC §21: within a minute; a restarted single serve waits
#: out its dead predecessor's lease, so short).
POLL_LEASE = timedelta(seconds=15)


class Offsets:
    """Which updates this poller took and finished, and so the offset it may confirm.

    Telegram's offset confirms every update below it, so it may only pass
    the oldest update still being handled: ``offset`` is that update's id,
    or one past the newest when all are finished.
    """

    def __init__(self) -> None:
        #: Update id -> finished, for ids at or above the offset.
        self._taken: dict[int, bool] = {}
        #: Every id below this is finished and confirmed (or about to be).
        self._floor: int | None = None

    def known(self, update_id: int) -> bool:
        """True when the update was taken already (being handled or finished)."""
        return update_id in self._taken or (self._floor is not None and update_id < self._floor)

    def take(self, update_id: int) -> None:
        """Note that handling ``update_id`` began."""
        self._taken[update_id] = False

    def finish(self, update_id: int) -> None:
        """Note that ``update_id``'s intake committed: it may be confirmed."""
        if update_id in self._taken:
            self._taken[update_id] = True

    def offset(self) -> int | None:
        """The offset the next getUpdates may send; None before the first update."""
        if self._taken:
            unfinished = [uid for uid, done in self._taken.items() if not done]
            floor = min(unfinished) if unfinished else max(self._taken) + 1
            self._taken = {uid: done for uid, done in self._taken.items() if uid >= floor}
            self._floor = floor
        return self._floor


class BotPolling:
    """Long polling as a task of the service, stopped by the service, never by a signal.

    The loop calls getUpdates itself and hands each update to the
    dispatcher, at most ``concurrency`` at once. The notifier keeps sending
    through the bot's session until the workers have drained.
    """

    def __init__(
        self,
        bot: Bot,
        dispatcher: Dispatcher,
        *,
        polling_timeout: int = 30,
        concurrency: int = 8,
        retry_delay: float = 1.0,
        busy_pause: float = 1.0,
        chats: ChatStore | None = None,
        holder: str = "",
        lease: timedelta = POLL_LEASE,
    ) -> None:
        self.bot = bot
        self.dispatcher = dispatcher
        #: Seconds one getUpdates call waits for news.
        self.polling_timeout = polling_timeout
        #: Updates handled at once: bounds parallel downloads.
        self.concurrency = concurrency
        #: First wait before trying Telegram again when it cannot be reached.
        self.retry_delay = retry_delay
        #: While the oldest update is still being handled, getUpdates answers at once with
        #: it: the pause between such polls, which bounds how late a new update is seen.
        self.busy_pause = busy_pause
        #: Where the polling lease is kept; None: this process polls alone.
        self.chats = chats
        #: This process's name in the lease: unique to the process.
        self.holder = holder
        #: How long the lease lasts unrenewed; renewed every third of it.
        self.lease = lease
        #: The lease while this process holds it.
        self.held: PollLease | None = None
        #: Set while ``held``: what a test or a probe awaits.
        self.holding = asyncio.Event()
        self.offsets = Offsets()
        self._confirmed: int | None = None
        self._task: asyncio.Task[None] | None = None
        self._stopping = asyncio.Event()
        self._polling = asyncio.Event()
        self._inflight: dict[int, asyncio.Task[None]] = {}
        self._changed = asyncio.Event()

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

        A cancelled download leaves no file and no job, and its update is not
        confirmed: Telegram hands it to the next poller, which takes it then.
        What finished is confirmed before returning.
        """
        task = self._task
        if task is None:
            return
        self._stopping.set()
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        inflight = set(self._inflight.values())
        if inflight:
            _, pending = await asyncio.wait(inflight, timeout=grace)
            for handling in pending:
                handling.cancel()
            await asyncio.gather(*inflight, return_exceptions=True)
        if self._polling.is_set() and (self.chats is None or self.held is not None):
            await self._confirm()
        await self._release()
        log.info("bot.stopped")

    async def _release(self) -> None:
        """Give the lease up, so another process polls without waiting for it to run out."""
        held, self.held = self.held, None
        self.holding.clear()
        if held is None or self.chats is None:
            return
        try:
            await self.chats.release_poll_lease(held)
        except TranscriberError as exc:
            log.warning("bot.poll_lease_failed", extra={"error_type": type(exc).__name__})

    async def close(self) -> None:
        """Close the bot's HTTP session; after the workers drained, as the notifier uses it."""
        await self.bot.session.close()

    async def _run(self) -> None:
        if not await self._reach_telegram():
            return
        self._polling.set()
        try:
            if self.chats is None:
                await self._poll()
            else:
                await self._poll_while_held(self.chats)
        except Exception as exc:
            log.exception("bot.polling_failed", extra={"error_type": type(exc).__name__})
            raise

    async def _poll_while_held(self, chats: ChatStore) -> None:
        """Take the polling lease, poll while it holds, and start over when it is lost."""
        while not self._stopping.is_set():
            held = await self._take_lease(chats)
            if held is None:
                return
            self.held = held
            self.holding.set()
            log.info("bot.poll_lease_taken", extra={"fence": held.fence})
            polling = asyncio.create_task(self._poll(), name="transcriber-bot-poll")
            keeping = asyncio.create_task(self._keep_lease(chats, held))
            try:
                done, _ = await asyncio.wait(
                    {polling, keeping}, return_when=asyncio.FIRST_COMPLETED
                )
            finally:
                for task in (polling, keeping):
                    task.cancel()
                await asyncio.gather(polling, keeping, return_exceptions=True)
            error = polling.exception() if polling in done else None
            if error is not None:
                raise error
            if keeping in done:
                self.held = None
                self.holding.clear()
                log.warning("bot.poll_lease_lost", extra={"fence": held.fence})

    async def _take_lease(self, chats: ChatStore) -> PollLease | None:
        """Wait until this process holds the lease; None when told to stop first."""
        period = self.lease.total_seconds() / 3
        while not self._stopping.is_set():
            try:
                held = await chats.take_poll_lease(self.holder, lease=self.lease)
            except TranscriberError as exc:
                log.warning("bot.poll_lease_failed", extra={"error_type": type(exc).__name__})
            else:
                if held is not None:
                    return held
            await self._pause(period)
        return None

    async def _keep_lease(self, chats: ChatStore, held: PollLease) -> None:
        """Renew every third of the lease; returns when it is lost (taken, or not renewable)."""
        period = self.lease.total_seconds() / 3
        loop = asyncio.get_running_loop()
        renewed = loop.time()
        while True:
            await asyncio.sleep(period)
            try:
                if not await chats.renew_poll_lease(held, lease=self.lease):
                    return
                renewed = loop.time()
            except TranscriberError as exc:
                log.warning("bot.poll_lease_failed", extra={"error_type": type(exc).__name__})
                # Unrenewed, it runs out for the others at its end: stop polling before.
                if loop.time() - renewed + period >= self.lease.total_seconds():
                    return

    async def _poll(self) -> None:
        """Read updates and hand them out, moving the offset only past finished ones."""
        delay = self.retry_delay
        while not self._stopping.is_set():
            if len(self._inflight) >= self.concurrency:
                await self._wait_change(None)
                continue
            offset = self.offsets.offset()
            try:
                updates = await get_updates(
                    self.bot, offset=offset, wait_seconds=self.polling_timeout
                )
            except TranscriberError as exc:
                log.warning(
                    "bot.poll_failed",
                    extra={"error_type": type(exc).__name__, "retry_seconds": delay},
                )
                await self._pause(delay)
                delay = min(delay * 2, _MAX_RETRY_DELAY)
                continue
            delay = self.retry_delay
            self._confirmed = offset
            fresh = [update for update in updates if not self.offsets.known(update.update_id)]
            for update in fresh[: self.concurrency - len(self._inflight)]:
                self._hand_out(update)
            if updates and not fresh:
                # Only updates being handled came back: wait for one to finish, or a while.
                await self._wait_change(self.busy_pause)

    def _hand_out(self, update: Update) -> None:
        update_id = update.update_id
        self.offsets.take(update_id)
        task = asyncio.create_task(self._handle(update), name=f"transcriber-update-{update_id}")
        self._inflight[update_id] = task

    async def _handle(self, update: Update) -> None:
        update_id = update.update_id
        try:
            await self.dispatcher.feed_update(self.bot, update)
        except asyncio.CancelledError:
            # Not finished: the update stays unconfirmed and comes back to the next poller.
            raise
        except Exception as exc:  # noqa: BLE001 - a bad update must not come back forever
            # No traceback: it may quote the update, names and all (reference: Privacy).
            log.error("bot.update_failed", extra={"error_type": type(exc).__name__})  # noqa: TRY400
            self.offsets.finish(update_id)
        else:
            self.offsets.finish(update_id)
        finally:
            del self._inflight[update_id]
            self._changed.set()

    async def _wait_change(self, seconds: float | None) -> None:
        """Until an update's handling ends, ``seconds`` pass, or the poller is told to stop."""
        self._changed.clear()
        waits = [asyncio.ensure_future(self._changed.wait())]
        waits.append(asyncio.ensure_future(self._stopping.wait()))
        try:
            await asyncio.wait(waits, timeout=seconds, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for waiting in waits:
                waiting.cancel()

    async def _confirm(self) -> None:
        """Tell Telegram what finished since the last poll, so it is not handed out again."""
        offset = self.offsets.offset()
        if offset is None or offset == self._confirmed:
            return
        try:
            async with asyncio.timeout(_CONFIRM_SECONDS):
                await get_updates(self.bot, offset=offset, wait_seconds=0)
        except (TranscriberError, TimeoutError) as exc:
            # Harmless: a recording read again is known by its chat and message.
            log.warning("bot.confirm_failed", extra={"error_type": type(exc).__name__})
        else:
            self._confirmed = offset

    async def _pause(self, seconds: float) -> None:
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(seconds):
                await self._stopping.wait()

    async def _reach_telegram(self) -> bool:
        """Ask getMe until it answers, and take back any webhook; False when told to stop.

        A webhook left by an earlier start in webhook mode would make every
        getUpdates a 409 (ADR 53).
        """
        delay = self.retry_delay
        while not self._stopping.is_set():
            try:
                await get_me(self.bot, answer_within=_GET_ME_TIMEOUT)
                await delete_webhook(self.bot)
            except TranscriberError as exc:
                log.warning(
                    "bot.unreachable",
                    extra={"error_type": type(exc).__name__, "retry_seconds": delay},
                )
            else:
                return True
            await self._pause(delay)
            delay = min(delay * 2, _MAX_RETRY_DELAY)
        return False
