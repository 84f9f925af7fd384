"""Downloading a Telegram file: the byte cap, HTTP and local paths (reference: Telegram bot)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path

import pytest
from aiogram import Bot

from tests.support.fake_bot_api import TOKEN, FakeBotApi, close_bot
from transcriber_adapters.telegram import (
    FileTooLarge,
    TelegramRefused,
    download_file,
    make_bot,
)

MINUTE = timedelta(minutes=1)


@pytest.fixture
async def bot() -> AsyncIterator[tuple[FakeBotApi, Bot]]:
    async with FakeBotApi(local=True) as api:
        bot = make_bot(TOKEN, api.url)
        try:
            yield api, bot
        finally:
            await close_bot(bot)


async def test_http_download_writes_the_bytes(bot: tuple[FakeBotApi, Bot], tmp_path: Path) -> None:
    """A relative file path is fetched over HTTP from the file endpoint, whole."""
    api, client = bot
    data = bytes(range(256)) * 5000
    file = api.add_file(data)
    target = tmp_path / "out"
    size = await download_file(client, file.file_id, target, max_bytes=10**7, inactivity=MINUTE)
    assert size == len(data)
    assert target.read_bytes() == data


async def test_more_bytes_than_the_cap_stop_the_download(
    bot: tuple[FakeBotApi, Bot], tmp_path: Path
) -> None:
    """A file that states a small size but sends more than the cap is cut off as too large."""
    api, client = bot
    file = api.add_file(b"z" * 3_000_000, declared_size=10)
    with pytest.raises(FileTooLarge):
        await download_file(
            client, file.file_id, tmp_path / "out", max_bytes=1_000_000, inactivity=MINUTE
        )


async def test_unknown_file_is_a_refusal(bot: tuple[FakeBotApi, Bot], tmp_path: Path) -> None:
    """A file id Telegram does not know is refused, in the core's error tree."""
    _, client = bot
    with pytest.raises(TelegramRefused):
        await download_file(client, "no-such-id", tmp_path / "out", max_bytes=10, inactivity=MINUTE)


async def test_unreadable_local_path_is_a_refusal(
    bot: tuple[FakeBotApi, Bot], tmp_path: Path
) -> None:
    """An absolute path this process cannot see (server on another disk) is refused, not a crash."""
    api, client = bot
    file = api.add_file(b"elsewhere")
    file.file_path = "/nonexistent/telegram-bot-api/voice/file_1.oga"
    with pytest.raises(TelegramRefused) as caught:
        await download_file(
            client, file.file_id, tmp_path / "out", max_bytes=10**6, inactivity=MINUTE
        )
    assert "/nonexistent" not in caught.value.message
