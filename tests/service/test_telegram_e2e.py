"""Acceptance 1, Telegram part: the service with a bot against a local fake Bot API server."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Any

from tests.support.fake_bot_api import (
    SENDER_FIRST_NAME,
    SENDER_LAST_NAME,
    SENDER_USERNAME,
    TOKEN,
    FakeBotApi,
)
from tests.support.service import Service, running_service

CHAT = 4242


@contextlib.asynccontextmanager
async def service_beside(
    tmp_path: Path, config: Mapping[str, Mapping[str, Any]]
) -> AsyncIterator[Service]:
    """Start the service from a thread, so this loop keeps serving the fake while it boots."""
    with contextlib.ExitStack() as stack:
        service = await asyncio.to_thread(
            stack.enter_context, running_service(tmp_path, config=config)
        )
        try:
            yield service
        finally:
            await asyncio.to_thread(stack.close)


async def test_voice_message_is_acknowledged_then_transcribed(
    tmp_path: Path, recording: bytes
) -> None:
    """A voice message gets "accepted" at once as a reply, edited into the transcript later."""
    async with FakeBotApi() as api:
        config = {"telegram": {"token": TOKEN, "api_base": api.url}}
        async with service_beside(tmp_path, config) as service:
            voice = api.add_file(recording)
            message_id = await api.push_media(CHAT, "voice", voice)
            status = await api.wait_shown_where(CHAT, lambda sent: "seconds" in sent.body)
            jobs = service.query("SELECT state, origin_chat_id, origin_message_id FROM jobs")
            stored = service.stored_names()
            logs = service.logs()
    assert status.reply_to == message_id
    assert "transcribing" in status.history[0].lower()
    assert api.sent_to(CHAT) == [status]
    assert jobs == [("done", CHAT, message_id)]
    assert any(name.endswith(".ogg") for name in stored)
    for secret in (SENDER_FIRST_NAME, SENDER_LAST_NAME, SENDER_USERNAME, TOKEN):
        assert secret not in logs


async def test_service_without_token_runs_no_bot(tmp_path: Path) -> None:
    """With an empty token the service starts and never calls a Bot API."""
    async with FakeBotApi() as api:
        async with service_beside(tmp_path, {"telegram": {"api_base": api.url}}) as service:
            assert await asyncio.to_thread(service.stop) == 0
        assert api.calls == []


async def test_recording_being_received_when_serve_is_killed_is_taken_after_restart(
    tmp_path: Path, recording: bytes
) -> None:
    """SIGKILL mid-download leaves the update unconfirmed: the restarted serve makes one job."""
    async with FakeBotApi() as api:
        config = {"telegram": {"token": TOKEN, "api_base": api.url}}
        api.hold_downloads = asyncio.Event()
        async with service_beside(tmp_path, config) as service:
            voice = api.add_file(recording)
            message_id = await api.push_media(CHAT, "voice", voice)
            async with asyncio.timeout(20):
                await api.download_started.wait()
            await asyncio.to_thread(service.kill)
        assert api.sent == []
        api.hold_downloads.set()
        api.hold_downloads = None
        async with service_beside(tmp_path, config) as service:
            status = await api.wait_shown_where(CHAT, lambda sent: "seconds" in sent.body)
            jobs = service.query("SELECT state, origin_chat_id, origin_message_id FROM jobs")
    assert status.reply_to == message_id
    assert api.sent_to(CHAT) == [status], "one status message, edited into the transcript"
    assert jobs == [("done", CHAT, message_id)]
