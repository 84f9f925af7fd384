"""The Telegram poller's lease and chat settings in dicts: the chat store of one process."""

from __future__ import annotations

import threading
from datetime import datetime, timedelta

import attrs

from transcriber_adapters.system import SystemClock
from transcriber_core.entities import ChatMode, ChatSettings, PollLease
from transcriber_core.ports import Clock


class MemoryChatStore:
    """One lease and a dict of chats; ``saves`` records every settings change, in order."""

    def __init__(self, clock: Clock | None = None) -> None:
        self._clock: Clock = clock or SystemClock()
        self._lock = threading.Lock()
        self._lease: tuple[PollLease, datetime] | None = None
        self._fence = 0
        self._chats: dict[int, ChatSettings] = {}
        #: The settings after each change, oldest first.
        self.saves: list[ChatSettings] = []

    def reset(self) -> None:
        """Forget the lease, every chat and the record of saves."""
        with self._lock:
            self._lease = None
            self._fence = 0
            self._chats.clear()
            self.saves.clear()

    async def take_poll_lease(self, holder: str, *, lease: timedelta) -> PollLease | None:
        """Hold the polling lease for ``lease`` from now; None while another holds it."""
        with self._lock:
            now = self._clock.now()
            if self._lease is not None and self._lease[1] > now:
                return None
            self._fence += 1
            taken = PollLease(holder=holder, fence=self._fence)
            self._lease = (taken, now + lease)
            return taken

    async def renew_poll_lease(self, held: PollLease, *, lease: timedelta) -> bool:
        """Hold ``held`` ``lease`` longer; False when another took it since."""
        with self._lock:
            if self._lease is None or self._lease[0] != held:
                return False
            self._lease = (held, self._clock.now() + lease)
            return True

    async def release_poll_lease(self, held: PollLease) -> None:
        """Let ``held`` go at once, if it still holds."""
        with self._lock:
            if self._lease is not None and self._lease[0] == held:
                self._lease = (held, self._clock.now())

    async def chat_settings(self, chat_id: int) -> ChatSettings:
        """The chat's settings, or the defaults."""
        with self._lock:
            return self._chats.get(chat_id, ChatSettings(chat_id=chat_id))

    async def set_chat_language(self, chat_id: int, language: str | None) -> ChatSettings:
        """Keep the chat's language, its mode untouched; the settings now."""
        with self._lock:
            known = self._chats.get(chat_id, ChatSettings(chat_id=chat_id))
            return self._keep(attrs.evolve(known, language=language))

    async def set_chat_mode(self, chat_id: int, mode: ChatMode) -> ChatSettings:
        """Keep the chat's mode, its language untouched; the settings now."""
        with self._lock:
            known = self._chats.get(chat_id, ChatSettings(chat_id=chat_id))
            return self._keep(attrs.evolve(known, mode=mode))

    async def set_chat_summary(self, chat_id: int, summary: bool | None) -> ChatSettings:
        """Keep the chat's summary choice (None: the service's), the rest untouched."""
        with self._lock:
            known = self._chats.get(chat_id, ChatSettings(chat_id=chat_id))
            return self._keep(attrs.evolve(known, summary=summary))

    def _keep(self, settings: ChatSettings) -> ChatSettings:
        self._chats[settings.chat_id] = settings
        self.saves.append(settings)
        return settings
