"""Linking Telegram chats from the workspace, and re-enabling a person (ADR 60), in-process.

The runtime here has a bot on the fake Bot API (built, never polling): the
Telegram page names it from ``getMe``; ``runtime`` of ``tests/app`` has none.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

from tests.app.test_workspace import (
    SECRET,
    bearer,
    csrf,
    make_token,
    owner,
    person,
    recording,
    send,
)
from tests.support.admin import in_process_client, log_in, make_owner
from tests.support.fake_bot_api import BOT_USER, TOKEN, FakeBotApi
from transcriber_adapters.memory import ManualClock
from transcriber_app.bootstrap import Runtime, build
from transcriber_app.config import Config, HttpConfig, StorageConfig, TelegramConfig
from transcriber_core.people import Person, link_code_hash, link_code_of

__all__ = ["owner", "recording"]  # the workspace's fixtures, used by the tests here

_CODE = re.compile(r'id="link-code" class="secret">/link ([A-Z0-9-]+)<')


@pytest.fixture
async def bot_api() -> AsyncIterator[FakeBotApi]:
    """The fake Telegram Bot API on 127.0.0.1."""
    async with FakeBotApi() as api:
        yield api


@pytest.fixture
async def runtime(
    tmp_path: Path, clock: ManualClock, bot_api: FakeBotApi
) -> AsyncIterator[Runtime]:
    """A runtime whose bot is the fake Bot API's (built, not polling)."""
    config = Config(
        storage=StorageConfig(data_dir=tmp_path / "data"),
        http=HttpConfig(host="127.0.0.1", port=8123),
        telegram=TelegramConfig(token=TOKEN, api_base=bot_api.url),
    )
    built = await build(config, clock=clock)
    yield built
    await built.close()


@pytest.fixture
async def botless(tmp_path: Path, clock: ManualClock) -> AsyncIterator[Runtime]:
    """A runtime with no ``[telegram] token``."""
    config = Config(
        storage=StorageConfig(data_dir=tmp_path / "botless"),
        http=HttpConfig(host="127.0.0.1", port=8124),
    )
    built = await build(config, clock=clock)
    yield built
    await built.close()


async def test_the_page_names_the_bot_with_its_t_me_link_asking_telegram_once(
    runtime: Runtime, owner: httpx.AsyncClient, bot_api: FakeBotApi
) -> None:
    """The page says @username from getMe with its t.me link; getMe is asked once, then kept."""
    alice = await person(runtime, owner, "alice")
    username = BOT_USER["username"]
    for _ in range(2):
        page = await alice.get("/w/telegram")
        assert page.status_code == 200
        assert f'<a href="https://t.me/{username}" rel="noopener noreferrer">@{username}</a>' in (
            page.text
        )
        assert "Make a link code" in page.text
    assert bot_api.calls.count("getme") == 1
    await alice.aclose()


async def test_without_a_bot_the_page_says_so_and_makes_no_code(botless: Runtime) -> None:
    """No bot configured: the page says none is set up, offers no code, and a post makes none."""
    await make_owner(botless)
    async with in_process_client(botless) as owner:
        assert (await log_in(owner)).status_code == 303
        alice = await person(botless, owner, "alice")
    page = await alice.get("/w/telegram")
    assert page.status_code == 200
    assert "No Telegram bot is set up" in page.text
    assert "Make a link code" not in page.text
    assert "t.me" not in page.text
    answer = await alice.post("/w/telegram/code", data={"csrf": csrf(page.text)})
    assert answer.status_code == 409
    assert _CODE.search(answer.text) is None
    await alice.aclose()


async def someone(runtime: Runtime, name: str) -> Person:
    """The stored person called ``name``."""
    (found,) = [p for p in await runtime.people.list_people() if p.name == name]
    return found


async def make_code(client: httpx.AsyncClient) -> str:
    """Make a link code on the Telegram page; the code, shown once."""
    page = await client.get("/w/telegram")
    assert page.status_code == 200
    answer = await client.post("/w/telegram/code", data={"csrf": csrf(page.text)})
    assert answer.status_code == 201, answer.text
    match = _CODE.search(answer.text)
    assert match is not None, answer.text
    return match[1]


async def test_a_code_made_on_the_page_links_a_chat_once(
    runtime: Runtime, owner: httpx.AsyncClient
) -> None:
    """The page's code is stored hashed, links one chat once, and the chat is listed."""
    alice = await person(runtime, owner, "alice")
    code = await make_code(alice)
    assert re.fullmatch(r"[A-Z2-9]{4}-[A-Z2-9]{4}", code)
    assert code not in (await alice.get("/w/telegram")).text  # shown once
    normal = link_code_of(code.lower())
    assert normal is not None
    me = await someone(runtime, "alice")
    assert await runtime.people.use_link_code(link_code_hash(normal), chat_id=5150) == me
    assert await runtime.people.use_link_code(link_code_hash(normal), chat_id=5151) is None
    page = await alice.get("/w/telegram")
    assert "5150" in page.text
    assert "5151" not in page.text
    await alice.aclose()


async def test_a_chat_is_unlinked_from_the_page_only_by_its_person(
    runtime: Runtime, owner: httpx.AsyncClient
) -> None:
    """Another person's unlink of my chat changes nothing; mine ends the link."""
    alice = await person(runtime, owner, "alice")
    bob = await person(runtime, owner, "bob")
    normal = link_code_of(await make_code(alice))
    assert normal is not None
    await runtime.people.use_link_code(link_code_hash(normal), chat_id=5150)
    page = await bob.get("/w/telegram")
    answer = await bob.post("/w/telegram/5150/unlink", data={"csrf": csrf(page.text)})
    assert answer.status_code == 303
    assert "No such chat of yours." in (await bob.get("/w/telegram")).text
    assert await runtime.people.person_for_chat(5150) == await someone(runtime, "alice")
    page = await alice.get("/w/telegram")
    answer = await alice.post("/w/telegram/5150/unlink", data={"csrf": csrf(page.text)})
    assert answer.status_code == 303
    assert "Chat unlinked." in (await alice.get("/w/telegram")).text
    assert await runtime.people.person_for_chat(5150) is None
    for client in (alice, bob):
        await client.aclose()


async def test_the_owner_re_enables_a_person_without_their_old_token_or_session(
    runtime: Runtime, owner: httpx.AsyncClient, recording: bytes
) -> None:
    """Re-enabled, a person signs in again and keeps their recordings; old tokens stay dead."""
    alice = await person(runtime, owner, "alice")
    token = await make_token(alice)
    job_id = await send(alice, recording, token)
    me = await someone(runtime, "alice")
    page = await owner.get("/admin/people")
    await owner.post(f"/admin/people/{me.id}/disable", data={"csrf": csrf(page.text)})
    page = await owner.get("/admin/people")
    assert f'action="/admin/people/{me.id}/enable"' in page.text
    answer = await owner.post(f"/admin/people/{me.id}/enable", data={"csrf": csrf(page.text)})
    assert answer.status_code == 303
    assert "Enabled" in (await owner.get("/admin/people")).text
    # The session ended by the disabling stays ended; the old token stays refused.
    assert (await alice.get("/w/")).status_code == 303
    upload = await alice.post(
        "/api/audio", files={"file": ("a.mp3", recording, "audio/mpeg")}, headers=bearer(token)
    )
    assert upload.status_code == 401
    login = await alice.get("/w/login")
    form = {"csrf": csrf(login.text), "name": "alice", "password": SECRET, "next": "/w/"}
    assert (await alice.post("/w/login", data=form)).status_code == 303
    assert job_id[:8] in (await alice.get("/w/")).text
    assert await runtime.people.list_tokens(me.id) == []
    await alice.aclose()


async def test_enable_needs_the_owner_and_csrf(runtime: Runtime, owner: httpx.AsyncClient) -> None:
    """The enable action refuses a form without the CSRF token; an unknown id is told."""
    await person(runtime, owner, "alice")
    me = await someone(runtime, "alice")
    assert (await owner.post(f"/admin/people/{me.id}/enable", data={})).status_code == 403
    page = await owner.get("/admin/people")
    answer = await owner.post("/admin/people/nobody/enable", data={"csrf": csrf(page.text)})
    assert answer.status_code == 303
    assert "No such person." in (await owner.get("/admin/people")).text
