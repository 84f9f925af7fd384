"""Webhook mode: serve sets the webhook at start and takes updates on ``POST /telegram/webhook``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx

from tests.service.test_telegram_e2e import service_beside
from tests.support.fake_bot_api import TOKEN, FakeBotApi

CHAT = 4343
SECRET = "webhook-secret_0123456789"
URL = "https://bot.example.org/telegram/webhook"
HEADER = "X-Telegram-Bot-Api-Secret-Token"


async def post(client: httpx.AsyncClient, update: Any, **headers: str) -> httpx.Response:
    """Post ``update`` to the service's webhook with ``headers``."""
    return await client.post("/telegram/webhook", json=update, headers=headers)


async def test_webhook_is_set_and_checks_the_secret_and_takes_each_update_once(
    tmp_path: Path, recording: bytes
) -> None:
    """setWebhook at start; a wrong or missing secret is 401, nothing done; a repeat is one job."""
    async with FakeBotApi() as api:
        telegram = {
            "token": TOKEN,
            "api_base": api.url,
            "mode": "webhook",
            "webhook_url": URL,
            "webhook_secret": SECRET,
        }
        async with service_beside(tmp_path, {"telegram": telegram}) as service:
            assert api.webhook is not None
            assert (api.webhook["url"], api.webhook["secret_token"]) == (URL, SECRET)
            assert "message" in api.webhook["allowed_updates"]
            voice = api.add_file(recording)
            message_id = await api.push_media(CHAT, "voice", voice)
            update = api.update_of(CHAT, message_id)
            async with httpx.AsyncClient(base_url=service.base_url, timeout=20) as client:
                missing = await post(client, update)
                wrong = await post(client, update, **{HEADER: "not-the-secret"})
                assert api.calls.count("getfile") == 0  # nothing was processed
                garbage = await client.post(
                    "/telegram/webhook", content=b"not json", headers={HEADER: SECRET}
                )
                right = await post(client, update, **{HEADER: SECRET})
                again = await post(client, update, **{HEADER: SECRET})
                status = await api.wait_shown_where(CHAT, lambda sent: "seconds" in sent.body)
                jobs = service.query("SELECT origin_message_id FROM jobs")
            logs = service.logs()
    for refused in (missing, wrong):
        assert refused.status_code == 401
        assert refused.json()["error"] == "bad_webhook_secret"
    assert (garbage.status_code, garbage.json()["error"]) == (400, "bad_update")
    assert (right.status_code, again.status_code) == (200, 200)
    assert status.reply_to == message_id
    assert jobs == [(message_id,)]
    assert api.sent_to(CHAT) == [status], "one status message, edited into the transcript"
    assert "getupdates" not in api.calls
    assert SECRET not in logs
