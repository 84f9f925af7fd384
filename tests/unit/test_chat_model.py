"""The ``openai`` adapter's own ways (ADR 82): no retries of its own, a timeout, JSON mode."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from tests.support.fake_chat import API_KEY, MODEL, FakeChatServer, Reply
from transcriber_adapters.chat_model import NO_KEY, OpenAIChatModel
from transcriber_core.errors import ModelRefused, ModelUnavailable
from transcriber_core.summaries import Message

MESSAGES = (Message(role="system", content="JSON please."), Message(role="user", content="hi"))


@pytest.fixture
async def fake() -> AsyncIterator[FakeChatServer]:
    """A chat server on 127.0.0.1."""
    async with FakeChatServer() as server:
        yield server


async def test_a_server_error_is_asked_once(fake: FakeChatServer) -> None:
    """The client's own retries are off: a 500 is one request, the queue retries (ADR 83)."""
    model = OpenAIChatModel(base_url=fake.base_url, model=MODEL, api_key=API_KEY)
    fake.answer_next(Reply(status=500))
    with pytest.raises(ModelUnavailable):
        await model.complete(MESSAGES, want_json=True)
    assert len(fake.requests) == 1
    await model.close()


async def test_a_slow_server_times_out_as_unavailable(fake: FakeChatServer) -> None:
    """An answer later than ``timeout_seconds`` is ``ModelUnavailable``, asked once."""
    never = asyncio.Event()
    fake.answer_next(Reply(until=never))
    model = OpenAIChatModel(
        base_url=fake.base_url, model=MODEL, api_key=API_KEY, timeout_seconds=0.3
    )
    with pytest.raises(ModelUnavailable, match="in time"):
        await model.complete(MESSAGES, want_json=False)
    assert len(fake.requests) == 1
    never.set()
    await model.close()


async def test_a_server_without_json_mode_is_asked_in_words(fake: FakeChatServer) -> None:
    """A 400 for ``response_format``: asked again without it, and never with it again."""
    fake.json_mode = False
    model = OpenAIChatModel(base_url=fake.base_url, model=MODEL, api_key=API_KEY)
    fake.answer_next("{}", "{}")
    assert (await model.complete(MESSAGES, want_json=True)).text == "{}"
    assert (await model.complete(MESSAGES, want_json=True)).text == "{}"
    sent = [r.response_format for r in fake.requests]
    assert sent == [{"type": "json_object"}, None, None]
    await model.close()


async def test_a_bad_request_without_json_mode_is_refused(fake: FakeChatServer) -> None:
    """A 400 that is not about ``response_format`` stays a refusal, after one plain retry."""
    model = OpenAIChatModel(base_url=fake.base_url, model=MODEL, api_key=API_KEY)
    fake.answer_next(Reply(status=400), Reply(status=400))
    with pytest.raises(ModelRefused, match="400"):
        await model.complete(MESSAGES, want_json=True)
    assert model.json_mode
    await model.close()


async def test_no_key_sends_a_placeholder_and_a_wrong_one_is_refused() -> None:
    """A server that needs no key gets a placeholder; a wrong key is a 401 refusal."""
    async with FakeChatServer(api_key="") as open_server:
        model = OpenAIChatModel(base_url=open_server.base_url, model=MODEL)
        await model.complete(MESSAGES, want_json=False)
        assert open_server.requests[0].authorization == f"Bearer {NO_KEY}"
        await model.close()
    async with FakeChatServer() as server:
        model = OpenAIChatModel(base_url=server.base_url, model=MODEL, api_key="wrong")
        with pytest.raises(ModelRefused, match="api_key"):
            await model.complete(MESSAGES, want_json=False)
        await model.close()


async def test_nothing_of_the_request_is_logged(
    fake: FakeChatServer, caplog: pytest.LogCaptureFixture
) -> None:
    """Neither the transcript nor the answer reaches a log record, even when debugging."""
    caplog.set_level("DEBUG")
    secret = "Zanzibar-4471 meeting notes"
    model = OpenAIChatModel(base_url=fake.base_url, model=MODEL, api_key=API_KEY)
    fake.answer_next(f'{{"text": "{secret}"}}')
    await model.complete([Message(role="user", content=secret)], want_json=True)
    await model.close()
    assert all(secret not in record.getMessage() for record in caplog.records)
    assert all(secret not in str(record.__dict__) for record in caplog.records)
