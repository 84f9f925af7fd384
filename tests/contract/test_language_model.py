"""The language model contract over the memory model and the real ``openai`` client (ADR 82).

The ``openai`` adapter talks to a fake OpenAI-compatible chat server on
127.0.0.1 over real HTTP (``tests/support/fake_chat.py``).
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import attrs
import pytest

from tests.support.fake_chat import API_KEY, MODEL, FakeChatServer, Reply
from transcriber_adapters.chat_model import OpenAIChatModel
from transcriber_adapters.memory import MemoryLanguageModel
from transcriber_contracts.language_model import LanguageModelContract, ModelCase
from transcriber_core.errors import ModelRefused, ModelUnavailable

#: What the memory driver raises for each status, as the real adapter classifies them.
_TRANSIENT = frozenset({429, 500, 502, 503})


@attrs.frozen
class MemoryDriver:
    """Scripts the memory model as a server would answer."""

    model: MemoryLanguageModel

    def answer_next(self, text: str) -> None:
        """The next request is answered ``text``."""
        self.model.script.append(text)

    def fail_next(self, status: int) -> None:
        """The next request fails as that status would."""
        kind = ModelUnavailable if status in _TRANSIENT else ModelRefused
        self.model.script.append(kind(f"the language model's server answered {status}"))


@attrs.frozen
class FakeServerDriver:
    """Scripts the fake chat server."""

    server: FakeChatServer

    def answer_next(self, text: str) -> None:
        """The next request is answered ``text``."""
        self.server.answer_next(text)

    def fail_next(self, status: int) -> None:
        """The next request is answered ``status``."""
        self.server.answer_next(Reply(status=status))


class TestMemoryLanguageModel(LanguageModelContract):
    """The memory model keeps the contract."""

    @pytest.fixture
    def case(self) -> ModelCase:
        model = MemoryLanguageModel()
        return ModelCase(model=model, driver=MemoryDriver(model))


class TestOpenAIChatModel(LanguageModelContract):
    """The ``openai`` client's adapter keeps the contract against a chat server over HTTP."""

    @pytest.fixture
    async def case(self) -> AsyncIterator[ModelCase]:
        async with FakeChatServer() as server:
            model = OpenAIChatModel(base_url=server.base_url, model=MODEL, api_key=API_KEY)
            yield ModelCase(model=model, driver=FakeServerDriver(server))
            await model.close()
