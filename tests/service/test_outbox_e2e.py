"""Webhooks and durable Telegram notices through the real server, across a restart (ADR 35)."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import hmac
import json
import time
from collections.abc import AsyncIterator, Callable, Mapping
from pathlib import Path
from typing import Any

import httpx
import pytest
from aiohttp import web

from tests.support.fake_bot_api import TOKEN, FakeBotApi
from tests.support.service import Service, running_service

SECRET = "whsec-e2e-7f3a"
#: A receiver's own secret in its URL: it must never reach a log.
URL_TOKEN = "rcv-token-91c2"
#: Longest wait for something the service does on its own (retries pause 1, 2, 4 s).
WAIT = 40.0
CHAT = 5151


class Receiver:
    """A webhook receiver that can go down and come back on the port it first got.

    It verifies every signature with the shared secret, answers 500 to the
    first ``fail_first`` calls to ``/hook``, redirects ``/redirect`` to
    ``/elsewhere``, and never answers ``/hang``.
    """

    def __init__(self, *, fail_first: int) -> None:
        #: 0 until the first start binds a port the kernel picks (never a probed one, which
        #: another program may take before the bind).
        self.port = 0
        self.fail_first = fail_first
        self.calls: list[str] = []
        #: Job ids of the 2xx answers, one per successful delivery.
        self.delivered: list[str] = []
        self.bad_signatures = 0
        self._runner: web.AppRunner | None = None
        self._hang = asyncio.Event()

    async def start(self) -> None:
        app = web.Application()
        app.router.add_post("/{tail:.*}", self._handle)
        self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.5)
        await self._runner.setup()
        await web.TCPSite(self._runner, "127.0.0.1", self.port).start()
        self.port = self._runner.addresses[0][1]

    async def stop(self) -> None:
        self._hang.set()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        self._hang = asyncio.Event()

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}?token={URL_TOKEN}"

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        body = await request.read()
        self.calls.append(request.path)
        if not _signed(request.headers.get("Transcriber-Signature", ""), body):
            self.bad_signatures += 1
            return web.Response(status=401)
        if request.path == "/hang":
            await self._hang.wait()
            return web.Response(status=503)
        if request.path == "/redirect":
            raise web.HTTPFound(self.url("/elsewhere"))
        if request.path == "/hook" and self.calls.count("/hook") <= self.fail_first:
            return web.Response(status=500)
        self.delivered.append(json.loads(body)["job_id"])
        return web.Response(status=204)


def _signed(header: str, body: bytes) -> bool:
    """Verify ``t=..,v1=..`` the way an integrator does (docs/api.md): HMAC and freshness."""
    fields = dict(part.split("=", 1) for part in header.split(",") if "=" in part)
    if "t" not in fields or "v1" not in fields:
        return False
    expected = hmac.new(SECRET.encode(), f"{fields['t']}.".encode() + body, hashlib.sha256)
    fresh = abs(time.time() - int(fields["t"])) < 300
    return fresh and hmac.compare_digest(expected.hexdigest(), fields["v1"])


@contextlib.asynccontextmanager
async def service_beside(
    root: Path, config: Mapping[str, Mapping[str, Any]], data_dir: Path | None = None
) -> AsyncIterator[Service]:
    """Start the service from a thread, so this loop keeps serving fakes while it boots."""
    with contextlib.ExitStack() as stack:
        service = await asyncio.to_thread(
            stack.enter_context,
            # Importing aiogram on a loaded machine has taken over 20 s.
            running_service(root, config=config, data_dir=data_dir, ready_timeout=90.0),
        )
        try:
            yield service
        finally:
            await asyncio.to_thread(stack.close)


async def _upload(service: Service, recording: bytes, callback: str) -> httpx.Response:
    async with httpx.AsyncClient(base_url=service.base_url, timeout=10) as client:
        return await client.post(
            "/api/audio",
            files={"file": ("voice.mp3", recording, "audio/mpeg")},
            data={"callback_url": callback},
        )


async def _until(what: Callable[[], bool], message: str) -> None:
    """Look until ``what`` holds; AssertionError naming ``message`` after ``WAIT`` seconds."""
    deadline = time.monotonic() + WAIT
    while not what():
        if time.monotonic() > deadline:
            raise AssertionError(f"waited {WAIT} s for: {message}")
        await asyncio.sleep(0.02)


async def test_each_ended_job_is_delivered_once_across_failures_and_a_restart(
    tmp_path: Path, recording: bytes
) -> None:
    """Signed webhooks survive two 500s, a receiver down across a service restart; one 2xx each.

    A redirecting receiver is never followed and a hanging one is cut off and
    tried again; neither the URL's token nor the secret reaches the log.
    """
    receiver = Receiver(fail_first=2)
    await receiver.start()
    config = {
        "webhooks": {"secret": SECRET, "allow_private": True, "timeout_seconds": 1.0},
        "memory": {"checks_before_done": 0},
    }
    try:
        async with service_beside(tmp_path / "run-1", config) as first:
            answer = await _upload(first, recording, receiver.url("/hook"))
            assert answer.status_code == 202, answer.text
            job_a = answer.json()["job_id"]
            for path in ("/redirect", "/hang"):
                assert (await _upload(first, recording, receiver.url(path))).status_code == 202
            await _until(lambda: receiver.delivered == [job_a], "job A delivered after two 500s")
            await _until(lambda: receiver.calls.count("/hang") >= 2, "the hanging call retried")
            await _until(lambda: receiver.calls.count("/redirect") >= 2, "the redirect retried")
            await receiver.stop()
            answer = await _upload(first, recording, receiver.url("/hook"))
            job_b = answer.json()["job_id"]
            await asyncio.to_thread(first.wait_for_job, job_b)
            await asyncio.to_thread(first.wait_for_log, "delivery.retry", job_b)
            assert await asyncio.to_thread(first.stop) == 0
        await receiver.start()
        async with service_beside(tmp_path / "run-2", config, data_dir=first.data_dir) as second:
            await _until(lambda: job_b in receiver.delivered, "job B delivered after the restart")
            assert await asyncio.to_thread(second.stop) == 0
        left = second.query("SELECT kind, count(*) FROM deliveries GROUP BY kind")
    finally:
        await receiver.stop()
    assert sorted(receiver.delivered) == sorted([job_a, job_b])
    assert receiver.bad_signatures == 0
    assert "/elsewhere" not in receiver.calls
    # Only the two undeliverable callbacks (redirect, hang) are still owed.
    assert left == [("webhook", 2)]
    for logs in (first.logs(), second.logs()):
        assert URL_TOKEN not in logs
        assert SECRET not in logs


async def test_bad_callbacks_are_refused_and_store_nothing(
    tmp_path: Path, recording: bytes
) -> None:
    """400 with a stable code and a reason for each refused callback_url; no job is made."""
    async with service_beside(tmp_path / "secret", {"webhooks": {"secret": SECRET}}) as service:
        refused = {
            "ftp://hooks.example.com/x": "bad_callback_url",
            "https://user:pw@hooks.example.com/x": "bad_callback_url",
            "https://hooks.example.com/" + "a" * 2048: "bad_callback_url",
            f"http://127.0.0.1:{service.port}/hook": "callback_address_refused",
            f"http://localhost:{service.port}/hook?token={URL_TOKEN}": "callback_address_refused",
        }
        for url, code in refused.items():
            answer = await _upload(service, recording, url)
            assert answer.status_code == 400, url
            assert answer.json()["error"] == code
            assert URL_TOKEN not in answer.text
        jobs = service.query("SELECT count(*) FROM jobs")
        staged = service.staging_files()
    async with service_beside(tmp_path / "no-secret", {}) as service:
        answer = await _upload(service, recording, "https://hooks.example.com/x")
        no_secret = (answer.status_code, answer.json()["error"])
    assert jobs == [(0,)]
    assert staged == []
    assert no_secret == (400, "webhooks_disabled")


@pytest.mark.timeout(180)
async def test_a_telegram_notice_that_fails_is_sent_later_also_after_a_restart(
    tmp_path: Path, recording: bytes
) -> None:
    """Telegram's 429s delay notices by their retry_after, never drop them, across a restart.

    The acknowledgement meets two 429s, and the service stops while it waits
    out the second; after the restart it is sent, then edited into the
    transcript that waited behind it (SPEC §21): one message, in order.
    """
    async with FakeBotApi() as api:
        api.fail_next("sendMessage", 429, "Too Many Requests: retry after 1", retry_after=1)
        api.fail_next("sendMessage", 429, "Too Many Requests: retry after 8", retry_after=8)
        config = {
            "telegram": {"token": TOKEN, "api_base": api.url},
            "memory": {"checks_before_done": 0},
        }
        async with service_beside(tmp_path / "run-1", config) as first:
            message_id = await api.push_media(CHAT, "voice", api.add_file(recording))
            await _until(lambda: api.calls.count("sendmessage") >= 2, "two refused notices")
            assert await asyncio.to_thread(first.stop) == 0
            job_states = first.query("SELECT state FROM jobs")
        told_before_restart = len(api.sent_to(CHAT))
        async with service_beside(tmp_path / "run-2", config, data_dir=first.data_dir) as second:
            await _until(
                lambda: any("seconds" in sent.body for sent in api.sent_to(CHAT)),
                "the transcript after the restart",
            )
            assert await asyncio.to_thread(second.stop) == 0
            left = second.query("SELECT count(*) FROM deliveries")
        sent = api.sent_to(CHAT)
    assert told_before_restart == 0
    assert job_states == [("done",)]
    assert [message.reply_to for message in sent] == [message_id]
    # Sent late, the acknowledgement says where the job stood then; it was edited after.
    assert sent[0].history
    assert "seconds" in sent[0].body
    assert left == [(0,)]
    assert "pause_seconds=1.0" in first.logs()
    assert "pause_seconds=8.0" in first.logs()


async def test_hanging_receivers_do_not_delay_an_unrelated_receiver(tmp_path: Path) -> None:
    """16 callbacks that never answer (on two hosts) do not hold back another host's webhook."""
    hanging = [Receiver(fail_first=0) for _ in range(2)]
    unrelated = Receiver(fail_first=0)
    for receiver in (*hanging, unrelated):
        await receiver.start()
    # Each hanging call holds its loop for 120 s: without isolation the unrelated webhook
    # could not come before WAIT (40 s) runs out, however fast or slow the box; with it, it
    # comes while they all still hang. Nothing is timed.
    config = {"webhooks": {"secret": SECRET, "allow_private": True, "timeout_seconds": 120.0}}
    # Not audio: each job fails at its first convert, so its webhook is owed at once.
    not_audio = b"this is not audio " * 64
    async with service_beside(tmp_path, config) as service:
        try:
            for n in range(16):
                url = hanging[n % 2].url(f"/hang?n={n}")
                assert (await _upload(service, not_audio, url)).status_code == 202
            await _until(
                lambda: sum(r.calls.count("/hang") for r in hanging) >= 2, "the hanging calls"
            )
            answer = await _upload(service, not_audio, unrelated.url("/hook"))
            job_id = answer.json()["job_id"]
            ended = await asyncio.to_thread(service.wait_for_job, job_id)
            assert ended["state"] == "failed"
            await _until(lambda: unrelated.delivered == [job_id], "the unrelated webhook")
        finally:
            for receiver in (*hanging, unrelated):
                await receiver.stop()
    assert unrelated.delivered == [job_id]
