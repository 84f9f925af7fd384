"""The notifier contract, run over every notifier adapter."""

from __future__ import annotations

import pytest

from transcriber_adapters.memory.notifier import MemoryNotifier
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
