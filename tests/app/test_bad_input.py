"""Input that used to be a 500, refused with 400 and a stable code on every route (SPEC §29).

JSON bodies (the API's speaker rename, the workspace's corrections, the
Telegram webhook) go through one decoder: a lone surrogate is
``bad_unicode``, nesting past ``MAX_DEPTH`` is ``too_deep``. A posted form
whose multipart ``charset`` decodes a field to a lone surrogate is
``bad_unicode`` on the admin panel and the workspace alike.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

from tests.app.test_workspace import bearer, csrf, make_token, person
from tests.app.test_workspace import owner as owner  # noqa: PLC0414 - the fixture, shared
from tests.support import multipart
from tests.support.admin import PASSWORD, in_process_client
from tests.support.fake_bot_api import TOKEN
from tests.support.media import tone
from transcriber_adapters.memory import ManualClock
from transcriber_app.bootstrap import Runtime, build
from transcriber_app.config import (
    Config,
    HttpConfig,
    StorageConfig,
    TelegramConfig,
)
from transcriber_app.web.api import api_document
from transcriber_app.web.api.handlers import MAX_RENAME_BYTES
from transcriber_app.web.inputs import MAX_DEPTH
from transcriber_core.entities import Job, Origin, Speaker, State, Word

#: What Telegram sends the webhook in, and the secret the tests' runtime expects.
SECRET_HEADER, SECRET = "X-Telegram-Bot-Api-Secret-Token", "webhook-secret_0123456789"
#: A lone surrogate, as JSON escapes it.
LONE = "\\ud800"
#: The red team's depths, and one past ours.
DEPTHS = (MAX_DEPTH + 1, 8_000, 30_000)
#: Speakers of the tests' recordings.
SPEAKERS = (Speaker(id="S1", name="Ann"), Speaker(id="S2", name="Bo"))


def nested(levels: int) -> bytes:
    """``levels`` arrays, each inside the one before."""
    return b"[" * levels + b"]" * levels


async def done_job(runtime: Runtime, owner_key: str | None = None) -> Job:
    """A done recording with two speakers, of ``owner_key`` (nobody's on an open API)."""
    now = runtime.services.clock.now()
    job = Job(
        id=runtime.services.ids.new_id(),
        state=State.DONE,
        origin=Origin.http(),
        text="Hello there.",
        words=(
            Word(text="Hello", start=0.0, end=0.5, speaker="S1"),
            Word(text="there.", start=0.6, end=1.0, speaker="S2"),
        ),
        speakers=SPEAKERS,
        owner=owner_key,
        created=now,
        updated=now,
    )
    created, _ = await runtime.services.repo.create(job)
    return created


def refusal(answer: httpx.Response) -> tuple[int, str]:
    """The status and stable code of a JSON error answer."""
    return answer.status_code, answer.json()["error"]


@pytest.fixture
async def client(runtime: Runtime) -> AsyncIterator[httpx.AsyncClient]:
    """A client of the open API in this process."""
    async with in_process_client(runtime) as client:
        yield client


async def test_a_speaker_rename_refuses_lone_surrogates_and_deep_nesting(
    runtime: Runtime, client: httpx.AsyncClient
) -> None:
    """``PATCH /api/jobs/{id}/speakers``: 400 ``bad_unicode`` and ``too_deep``; names unchanged."""
    job = await done_job(runtime)
    url = f"/api/jobs/{job.id}/speakers"
    headers = {"Content-Type": "application/json"}
    for body in (f'{{"S1": "Di{LONE}ane"}}', f'{{"S1{LONE}": "Diane"}}'):
        answer = await client.patch(url, content=body.encode(), headers=headers)
        assert refusal(answer) == (400, "bad_unicode"), answer.text
    for levels in DEPTHS:
        answer = await client.patch(url, content=nested(levels), headers=headers)
        # Past 16 KiB the size is refused first: 8,000 levels fit, 30,000 do not.
        wanted = (400, "too_deep") if 2 * levels <= MAX_RENAME_BYTES else (413, "too_large")
        assert refusal(answer) == wanted, answer.text
    assert (await runtime.services.jobs.get(job.id)).speakers == SPEAKERS
    fine = await client.patch(url, json={"S1": "Diane \U0001f600"})
    assert fine.status_code == 200, fine.text


async def test_a_correction_refuses_lone_surrogates_and_deep_nesting(
    runtime: Runtime, owner: httpx.AsyncClient
) -> None:
    """``POST /w/recordings/{id}/words``: 400 ``bad_unicode`` and ``too_deep``; nothing saved."""
    alice = await person(runtime, owner, "alice")
    (me,) = [p for p in await runtime.people.list_people() if p.name == "alice"]
    job = await done_job(runtime, me.owner_key)
    headers = {
        "X-CSRF-Token": csrf((await alice.get("/w/")).text),
        "Content-Type": "application/json",
    }
    url = f"/w/recordings/{job.id}/words"
    body = f'{{"version": 0, "start": 0, "end": 1, "text": "Hel{LONE}lo"}}'
    answer = await alice.post(url, content=body.encode(), headers=headers)
    assert refusal(answer) == (400, "bad_unicode"), answer.text
    for levels in DEPTHS:
        answer = await alice.post(url, content=nested(levels), headers=headers)
        assert refusal(answer) == (400, "too_deep"), answer.text
    assert (await runtime.services.jobs.get(job.id)).edit_version == 0
    await alice.aclose()


@pytest.fixture
async def bot_runtime(tmp_path: Path, clock: ManualClock) -> AsyncIterator[Runtime]:
    """A runtime whose bot takes webhooks (never started: no update here reaches Telegram)."""
    telegram = TelegramConfig(
        token=TOKEN,
        api_base="http://127.0.0.1:9",
        mode="webhook",
        webhook_url="https://bot.example.org/telegram/webhook",
        webhook_secret=SECRET,
    )
    config = Config(
        storage=StorageConfig(data_dir=tmp_path / "data"),
        http=HttpConfig(host="127.0.0.1", port=8123),
        telegram=telegram,
    )
    built = await build(config, clock=clock)
    yield built
    await built.close()


async def test_the_telegram_webhook_refuses_deep_nesting_and_lone_surrogates(
    bot_runtime: Runtime,
) -> None:
    """``POST /telegram/webhook`` with the right secret: 400 ``too_deep`` and ``bad_unicode``."""
    update = f'{{"update_id": 1, "message": {{"message_id": 2, "text": "{LONE}"}}}}'
    async with in_process_client(bot_runtime) as client:
        for levels in DEPTHS:
            answer = await client.post(
                "/telegram/webhook", content=nested(levels), headers={SECRET_HEADER: SECRET}
            )
            assert refusal(answer) == (400, "too_deep"), answer.text
        answer = await client.post(
            "/telegram/webhook", content=update.encode(), headers={SECRET_HEADER: SECRET}
        )
        assert refusal(answer) == (400, "bad_unicode"), answer.text
        garbage = await client.post(
            "/telegram/webhook", content=b"not json", headers={SECRET_HEADER: SECRET}
        )
        assert refusal(garbage) == (400, "bad_update")


def charset_form(fields: dict[str, str], charset: str) -> tuple[bytes, dict[str, str]]:
    """A multipart form of ``fields`` (ASCII as sent) whose Content-Type names ``charset``."""
    body = b"".join(multipart.part(name, value.encode()) for name, value in fields.items())
    headers = {"Content-Type": f"{multipart.CONTENT_TYPE}; charset={charset}"}
    return body + multipart.closing(), headers


@pytest.mark.parametrize(("charset", "lone"), [("unicode_escape", "\\ud800"), ("utf-7", "+2AA-")])
async def test_a_form_field_decoded_to_a_lone_surrogate_is_refused(
    runtime: Runtime, owner: httpx.AsyncClient, charset: str, lone: str
) -> None:
    """A token label or the owner's password that decodes to ``\\ud800``: 400 ``bad_unicode``."""
    alice = await person(runtime, owner, "alice")
    token = csrf((await alice.get("/w/tokens")).text)
    body, headers = charset_form({"csrf": token, "label": f"lap{lone}top"}, charset)
    answer = await alice.post("/w/tokens", content=body, headers=headers)
    assert refusal(answer) == (400, "bad_unicode"), answer.text
    (me,) = [p for p in await runtime.people.list_people() if p.name == "alice"]
    assert await runtime.people.list_tokens(me.id) == []
    await alice.aclose()
    async with in_process_client(runtime) as stranger:
        page = await stranger.get("/admin/login")
        fields = {
            "csrf": csrf(page.text),
            "name": "owner",
            "password": f"{PASSWORD}{lone}",
            "next": "/admin/",
        }
        body, headers = charset_form(fields, charset)
        answer = await stranger.post("/admin/login", content=body, headers=headers)
        assert refusal(answer) == (400, "bad_unicode"), answer.text


async def test_a_chat_id_past_64_bits_is_no_chat_not_a_500(
    runtime: Runtime, owner: httpx.AsyncClient
) -> None:
    """``POST /w/telegram/{huge}/unlink`` says "No such chat of yours." (it was OverflowError)."""
    alice = await person(runtime, owner, "alice")
    token = csrf((await alice.get("/w/telegram")).text)
    for chat_id in ("1" + "0" * 30, str(-(2**63) - 1)):
        answer = await alice.post(f"/w/telegram/{chat_id}/unlink", data={"csrf": token})
        assert answer.status_code == 303, answer.text
        assert "No such chat of yours." in (await alice.get("/w/telegram")).text
    await alice.aclose()


async def test_a_speakers_field_of_thousands_of_digits_is_bad_speakers(
    runtime: Runtime, client: httpx.AsyncClient, tmp_path: Path
) -> None:
    """``speakers`` of 5,000 digits is 400 ``bad_speakers`` (``int()`` refused it: a 500)."""
    recording = tone(tmp_path / "tone.mp3", 1.0).read_bytes()
    answer = await client.post(
        "/api/audio",
        files={"file": ("a.mp3", recording, "audio/mpeg")},
        data={"speakers": "9" * 5000},
    )
    assert refusal(answer) == (400, "bad_speakers"), answer.text
    assert sum((await runtime.services.repo.count_by_state()).values()) == 0


@pytest.mark.parametrize("expires", ["9" * 5000, "\u00b2"])
async def test_a_reset_link_whose_expiry_is_no_number_is_a_bad_link(
    client: httpx.AsyncClient, expires: str
) -> None:
    """``/admin/reset?token=`` with 5,000 digits or "²" before the dot: 403, the link refused."""
    answer = await client.get("/admin/reset", params={"token": f"{expires}.secret"})
    assert answer.status_code == 403, answer.text
    assert "Reset link refused" in answer.text


async def test_the_voices_routes_decode_their_bodies_by_the_same_rules(
    runtime: Runtime, owner: httpx.AsyncClient
) -> None:
    """``/api/voices``, added after the decoder, refuses deep and lone-surrogate bodies alike."""
    alice = await person(runtime, owner, "alice")
    headers = {**bearer(await make_token(alice)), "Content-Type": "application/json"}
    async with in_process_client(runtime) as client:
        for method, path in (
            ("POST", "/api/voices"),
            ("POST", "/api/voices/v1/samples"),
            ("PATCH", "/api/voices/v1"),
        ):
            deep = await client.request(method, path, content=nested(200), headers=headers)
            assert refusal(deep) == (400, "too_deep"), deep.text
            lone = f'{{"job_id": "j", "speaker": "S1", "name": "Di{LONE}"}}'.encode()
            answer = await client.request(method, path, content=lone, headers=headers)
            assert refusal(answer) == (400, "bad_unicode"), answer.text
    await alice.aclose()


def test_every_json_body_route_documents_the_decoders_refusals() -> None:
    """The OpenAPI document lists ``bad_unicode`` and ``too_deep`` in each JSON route's 400."""
    document = api_document(tokens=True)
    json_routes = [
        operation
        for operations in document["paths"].values()
        for operation in operations.values()
        if "application/json" in operation.get("requestBody", {}).get("content", {})
    ]
    assert len(json_routes) >= 4
    for operation in json_routes:
        schema = operation["responses"]["400"]["content"]["application/json"]["schema"]
        codes = schema["allOf"][-1]["properties"]["error"]["enum"]
        assert {"bad_unicode", "too_deep"} <= set(codes), operation["operationId"]
