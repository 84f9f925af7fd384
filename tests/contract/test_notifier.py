"""The notifier contract, run over every notifier adapter."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from tests.support.fake_bot_api import TOKEN, FakeBotApi, close_bot
from transcriber_adapters.memory.notifier import MemoryNotifier
from transcriber_adapters.telegram import TelegramNotifier, make_bot
from transcriber_contracts.notifier import NotifierCase, NotifierContract


class MemoryInbox:
    """Reads back what the memory notifier delivered."""

    def __init__(self, notifier: MemoryNotifier) -> None:
        self.notifier = notifier

    async def delivered(self, chat_id: int) -> list[str]:
        return self.notifier.delivered_to(chat_id)


class TestMemoryNotifier(NotifierContract):
    """The in-memory notifier keeps the contract."""

    @pytest.fixture
    async def case(self) -> NotifierCase:
        notifier = MemoryNotifier()
        return NotifierCase(notifier=notifier, inbox=MemoryInbox(notifier), chat_id=1001)


class TestTelegramNotifier(NotifierContract):
    """The Telegram notifier keeps the contract, talking HTTP to a fake Bot API server."""

    @pytest.fixture
    async def case(self) -> AsyncIterator[NotifierCase]:
        async with FakeBotApi() as api:
            bot = make_bot(TOKEN, api.url)
            try:
                yield NotifierCase(notifier=TelegramNotifier(bot), inbox=api, chat_id=1001)
            finally:
                await close_bot(bot)
