"""The daily quota at the intakes in-process (SPEC §20, ADR 59): /api, /v1, pages that show it."""

from __future__ import annotations

import hashlib
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest

from tests.app.test_workspace import bearer, csrf, make_token, owner, person
from tests.support.admin import in_process_client
from tests.support.media import encoded, tone
from transcriber_adapters.memory import ManualClock
from transcriber_app.bootstrap import Runtime, build
from transcriber_app.bot.texts import RUSSIAN, quota_text
from transcriber_app.config import Config, HttpConfig, QuotasConfig, StorageConfig
from transcriber_core.errors import QuotaExceeded

#: The deployment's static token.
STATIC = "a static token of the deployment"
#: Two seconds a day: a 1.5 s and a 0.5 s recording fill it exactly.
QUOTA = 2
#: The next UTC midnight after T0 (12:00).
MIDNIGHT = datetime(2026, 3, 2, tzinfo=UTC)

__all__ = ["owner"]  # the workspace's owner fixture, used by the page tests here


@pytest.fixture
async def runtime(tmp_path: Path, clock: ManualClock) -> AsyncIterator[Runtime]:
    """A runtime with a quota of two seconds a day and one static token; no workers run."""
    config = Config(
        storage=StorageConfig(data_dir=tmp_path / "data"),
        http=HttpConfig(host="127.0.0.1", port=8123, api_tokens=(STATIC,)),
        quotas=QuotasConfig(seconds_per_day=QUOTA),
    )
    built = await build(config, clock=clock)
    yield built
    await built.close()


@pytest.fixture
def wav(tmp_path: Path) -> dict[float, bytes]:
    """WAV recordings whose headers declare 1.5 s and 0.5 s."""
    return {s: tone(tmp_path / f"tone-{s}.wav", s).read_bytes() for s in (1.5, 0.5)}


async def upload(
    client: httpx.AsyncClient, data: bytes, *, token: str = STATIC, key: str | None = None
) -> httpx.Response:
    """``POST /api/audio`` with ``token`` (and an Idempotency-Key when given)."""
    headers = bearer(token) | ({"Idempotency-Key": key} if key else {})
    return await client.post(
        "/api/audio", files={"file": ("a.wav", data, "audio/wav")}, headers=headers
    )


async def test_api_refuses_past_the_quota_until_midnight_utc(
    runtime: Runtime, clock: ManualClock, wav: dict[float, bytes]
) -> None:
    """Up to exactly the quota is taken; one more is 429 quota_exceeded with its reset time."""
    async with in_process_client(runtime) as client:
        assert (await upload(client, wav[1.5])).status_code == 202
        over = await upload(client, wav[1.5])
        assert over.status_code == 429
        body = over.json()
        assert body["error"] == "quota_exceeded"
        assert datetime.fromisoformat(body["resets"]) == MIDNIGHT
        assert "0 s left" in body["message"]
        assert over.headers["retry-after"] == str(12 * 3600)
        # 1.5 s + 0.5 s is exactly the quota: taken.
        assert (await upload(client, wav[0.5])).status_code == 202
        spent = await upload(client, wav[0.5])
        assert spent.status_code == 429
        # A spent day is refused before the body is read, and the connection closed.
        assert spent.headers["connection"] == "close"
        assert "used up" in spent.json()["message"]
        clock.set(MIDNIGHT - timedelta(seconds=1))
        assert (await upload(client, wav[0.5])).headers["retry-after"] == "1"
        clock.set(MIDNIGHT)
        assert (await upload(client, wav[1.5])).status_code == 202
    assert runtime.services.usage is not None
    payer = hashlib.sha256(STATIC.encode()).hexdigest()
    used = (await runtime.services.usage.usage([payer]))[payer]
    assert (used.today, used.month) == (1.5, 3.5)


async def test_a_recording_longer_than_the_whole_day_is_counted_only_past_it(
    runtime: Runtime, tmp_path: Path
) -> None:
    """A 30-s MP3 against a 2-s day is refused without a length it was never counted to."""
    long = encoded(tmp_path / "long.mp3", 30.0, "-ar", "16000", "-c:a", "libmp3lame")
    async with in_process_client(runtime) as client:
        over = await client.post(
            "/api/audio",
            files={"file": ("long.mp3", long.read_bytes(), "audio/mpeg")},
            headers=bearer(STATIC),
        )
    assert over.status_code == 429
    message = over.json()["message"]
    assert "may be longer than the 2 s left" in message
    assert "(3 s)" not in message
    bounded = QuotaExceeded(resets=MIDNIGHT, left=2.0, incoming=3.0, exact=False)
    assert quota_text(bounded, RUSSIAN) == RUSSIAN.quota_maybe_too_long.format(
        left=2, resets="2026-03-02 00:00 UTC"
    )


async def test_a_replay_is_answered_even_when_the_day_is_spent(
    runtime: Runtime, wav: dict[float, bytes]
) -> None:
    """An upload retried with its Idempotency-Key gets its job, not a 429, and counts once."""
    async with in_process_client(runtime) as client:
        first = await upload(client, wav[1.5], key="retry-me")
        assert first.status_code == 202
        assert (await upload(client, wav[0.5])).status_code == 202
        again = await upload(client, wav[1.5], key="retry-me")
        assert again.status_code in (200, 202), again.text
        assert again.json()["job_id"] == first.json()["job_id"]
    assert runtime.services.usage is not None
    payer = hashlib.sha256(STATIC.encode()).hexdigest()
    assert (await runtime.services.usage.usage([payer]))[payer].today == 2.0


async def test_v1_refuses_in_openais_shape(runtime: Runtime, wav: dict[float, bytes]) -> None:
    """``/v1`` answers a spent day with 429 in OpenAI's error shape and a Retry-After."""
    async with in_process_client(runtime) as client:
        assert (await upload(client, wav[1.5])).status_code == 202
        over = await client.post(
            "/v1/audio/transcriptions",
            files={"file": ("a.wav", wav[1.5], "audio/wav")},
            data={"model": "whisper-1"},
            headers=bearer(STATIC),
        )
    assert over.status_code == 429
    error = over.json()["error"]
    assert error["code"] == "quota_exceeded"
    assert error["type"] == "insufficient_quota"
    assert "2026-03-02 00:00 UTC" in error["message"]
    assert over.headers["retry-after"] == str(12 * 3600)


async def test_a_persons_usage_shows_on_their_page_and_the_people_page(
    runtime: Runtime, owner: httpx.AsyncClient, wav: dict[float, bytes]
) -> None:
    """A person's seconds today and this month are on their workspace page and the admin's."""
    alice = await person(runtime, owner, "alice")
    token = await make_token(alice)
    assert (await upload(alice, wav[1.5], token=token)).status_code == 202
    home = await alice.get("/w/")
    assert 'class="usage-today">0:02<' in home.text
    assert "of 0:02" in home.text
    people = await owner.get("/admin/people")
    assert 'class="num usage-today" data-label="Today">0:02<' in people.text
    assert 'class="num usage-month" data-label="This month">0:02<' in people.text
    # Another payer's day is apart: the static token still has its two seconds.
    assert (await upload(alice, wav[1.5])).status_code == 202
    assert (await upload(alice, wav[0.5], token=token)).status_code == 202
    assert (await upload(alice, wav[0.5], token=token)).status_code == 429


async def test_the_upload_page_shares_the_persons_day_with_their_tokens(
    runtime: Runtime, owner: httpx.AsyncClient, wav: dict[float, bytes]
) -> None:
    """A file sent from the upload page counts on the person's day; past it, 429 quota_exceeded."""
    alice = await person(runtime, owner, "alice")
    token = await make_token(alice)
    assert (await upload(alice, wav[1.5], token=token)).status_code == 202
    page = await alice.get("/w/upload")
    headers = {"X-CSRF-Token": csrf(page.text)}
    files = {"file": ("a.wav", wav[1.5], "audio/wav")}
    over = await alice.post("/w/upload", files=files, headers=headers)
    assert over.status_code == 429
    assert over.json()["error"] == "quota_exceeded"
    assert datetime.fromisoformat(over.json()["resets"]) == MIDNIGHT
    files = {"file": ("a.wav", wav[0.5], "audio/wav")}
    assert (await alice.post("/w/upload", files=files, headers=headers)).status_code == 202
    assert (await upload(alice, wav[0.5], token=token)).status_code == 429
