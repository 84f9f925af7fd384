"""The workspace in-process: invites, passwords, sessions, tokens on /api and /v1, isolation."""

from __future__ import annotations

import hashlib
import re
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path

import httpx
import pytest

from tests.support.admin import OWNER_NAME, PASSWORD, in_process_client, log_in, make_owner
from tests.support.media import tone
from transcriber_adapters.memory import ManualClock
from transcriber_app.bootstrap import Runtime, build
from transcriber_app.config import Config, HttpConfig, StorageConfig
from transcriber_app.web.auth import prepare_admin
from transcriber_core.errors import JobNotFound
from transcriber_core.people import INVITE_LIFETIME, PERSON_OWNER_PREFIX

_CSRF = re.compile(r'name="csrf" value="([^"]+)"')
_LINK = re.compile(r'id="invite-link" class="secret">[^<]*?/w/invite\?token=([^<\s]+)<')
_TOKEN = re.compile(r'id="new-token" class="secret">(tsp_[^<]+)<')
#: The deployment's static token in the test that sets one.
STATIC = "the deployment's static token"
#: A password that is long enough.
SECRET = "a long enough password"


def csrf(html: str) -> str:
    """The CSRF token of the page's first form."""
    match = _CSRF.search(html)
    assert match is not None, html
    return match[1]


@pytest.fixture
async def owner(runtime: Runtime) -> AsyncIterator[httpx.AsyncClient]:
    """The owner's client, logged in to the admin panel."""
    await make_owner(runtime)
    async with in_process_client(runtime) as client:
        answer = await log_in(client)
        assert answer.status_code == 303, answer.text
        yield client


@pytest.fixture
async def recording(tmp_path: Path) -> bytes:
    """A short real recording to send."""
    return tone(tmp_path / "tone.mp3", 1.0).read_bytes()


async def invite(owner: httpx.AsyncClient, name: str) -> str:
    """Invite ``name`` from the admin panel; the invite link's token."""
    page = await owner.get("/admin/people")
    answer = await owner.post("/admin/people", data={"csrf": csrf(page.text), "name": name})
    assert answer.status_code == 201, answer.text
    match = _LINK.search(answer.text)
    assert match is not None, answer.text
    return match[1]


async def set_password(client: httpx.AsyncClient, token: str, password: str) -> httpx.Response:
    """Open the invite link and post the password twice."""
    page = await client.get("/w/invite", params={"token": token})
    assert page.status_code == 200
    form = {"csrf": csrf(page.text), "token": token, "password": password, "confirm": password}
    return await client.post("/w/invite", data=form)


async def person(runtime: Runtime, owner: httpx.AsyncClient, name: str) -> httpx.AsyncClient:
    """A new person's client, invited, with the password set and signed in."""
    token = await invite(owner, name)
    client = in_process_client(runtime)
    answer = await set_password(client, token, SECRET)
    assert answer.status_code == 303, answer.text
    assert answer.headers["location"] == "/w/"
    return client


async def make_token(client: httpx.AsyncClient, label: str = "laptop") -> str:
    """Make an API token on the tokens page; the token, shown once."""
    page = await client.get("/w/tokens")
    answer = await client.post("/w/tokens", data={"csrf": csrf(page.text), "label": label})
    assert answer.status_code == 201, answer.text
    match = _TOKEN.search(answer.text)
    assert match is not None, answer.text
    return match[1]


def bearer(token: str) -> dict[str, str]:
    """The header that sends ``token``."""
    return {"Authorization": f"Bearer {token}"}


async def send(client: httpx.AsyncClient, data: bytes, token: str) -> str:
    """Upload through ``/api/audio`` with ``token``; the job id."""
    answer = await client.post(
        "/api/audio", files={"file": ("a.mp3", data, "audio/mpeg")}, headers=bearer(token)
    )
    assert answer.status_code == 202, answer.text
    job_id: str = answer.json()["job_id"]
    return job_id


async def test_invite_password_token_upload_and_isolation(
    runtime: Runtime, owner: httpx.AsyncClient, recording: bytes
) -> None:
    """A person's token makes jobs of theirs, listed for them; another person sees none of it."""
    alice = await person(runtime, owner, "alice")
    bob = await person(runtime, owner, "bob")
    token = await make_token(alice, "alice's script")
    job_id = await send(alice, recording, token)

    stored = await runtime.services.jobs.get(job_id)
    assert stored.owner is not None
    assert stored.owner.startswith(PERSON_OWNER_PREFIX)
    assert len(stored.owner) == 64
    home = await alice.get("/w/")
    assert job_id in home.text
    assert (await alice.get(f"/w/recordings/{job_id}")).status_code == 200
    assert (await alice.get(f"/api/status/{job_id}", headers=bearer(token))).status_code == 200

    assert job_id not in (await bob.get("/w/")).text
    assert (await bob.get(f"/w/recordings/{job_id}")).status_code == 404
    other = await make_token(bob)
    assert (await bob.get(f"/api/status/{job_id}", headers=bearer(other))).status_code == 404
    # The API is open (no static tokens), yet a person's job is theirs alone.
    assert (await bob.get(f"/api/status/{job_id}")).status_code == 404
    assert "alice&#39;s script" in (await alice.get("/w/tokens")).text
    assert "alice&#39;s script" not in (await bob.get("/w/tokens")).text
    await alice.aclose()
    await bob.aclose()


async def test_a_persons_token_works_on_v1(
    runtime: Runtime, owner: httpx.AsyncClient, recording: bytes
) -> None:
    """``/v1`` takes a person's token too, and refuses a made-up one with a person's prefix."""
    alice = await person(runtime, owner, "alice")
    token = await make_token(alice)
    assert (await alice.get("/v1/models", headers=bearer(token))).status_code == 200
    assert (await alice.get("/v1/models", headers=bearer("tsp_" + "x" * 43))).status_code == 401
    await alice.aclose()


async def test_short_password_is_refused_with_a_clear_message(
    runtime: Runtime, owner: httpx.AsyncClient
) -> None:
    """A password under 12 characters is refused saying so, and the link still works after."""
    token = await invite(owner, "carol")
    async with in_process_client(runtime) as client:
        answer = await set_password(client, token, "short pass")
        assert answer.status_code == 400
        assert "The password must have at least 12 characters." in answer.text
        assert (await set_password(client, token, SECRET)).status_code == 303


async def test_an_invite_works_once_and_expires(
    runtime: Runtime, owner: httpx.AsyncClient, clock: ManualClock
) -> None:
    """A used link is refused; an unused one is refused once its lifetime has passed."""
    used = await invite(owner, "dave")
    late = await invite(owner, "erin")
    async with in_process_client(runtime) as client:
        assert (await set_password(client, used, SECRET)).status_code == 303
    async with in_process_client(runtime) as client:
        answer = await set_password(client, used, SECRET + "!")
        assert answer.status_code == 403
        assert "wrong, used or expired" in answer.text
        clock.advance(INVITE_LIFETIME + timedelta(seconds=1))
        assert (await set_password(client, late, SECRET)).status_code == 403


async def test_sign_out_and_in_again(runtime: Runtime, owner: httpx.AsyncClient) -> None:
    """Sign-out ends the session; the name and password sign in again; a wrong one does not."""
    alice = await person(runtime, owner, "alice")
    page = await alice.get("/w/")
    assert (await alice.post("/w/logout", data={"csrf": csrf(page.text)})).status_code == 303
    assert (await alice.get("/w/")).headers["location"].startswith("/w/login")
    login = await alice.get("/w/login")
    wrong = {"csrf": csrf(login.text), "name": "alice", "password": SECRET + "x", "next": "/w/"}
    answer = await alice.post("/w/login", data=wrong)
    assert answer.status_code == 403
    assert "Wrong name or password." in answer.text
    await runtime.logins.clear_login_failures("192.0.2.7")
    right = {**wrong, "password": SECRET}
    assert (await alice.post("/w/login", data=right)).status_code == 303
    assert (await alice.get("/w/")).status_code == 200
    await alice.aclose()


async def test_disabling_stops_sessions_and_tokens_at_once(
    runtime: Runtime, owner: httpx.AsyncClient, recording: bytes
) -> None:
    """After the owner disables a person, their open session and their token are refused."""
    alice = await person(runtime, owner, "alice")
    token = await make_token(alice)
    await send(alice, recording, token)
    (found,) = [p for p in await runtime.people.list_people() if p.name == "alice"]
    page = await owner.get("/admin/people")
    answer = await owner.post(f"/admin/people/{found.id}/disable", data={"csrf": csrf(page.text)})
    assert answer.status_code == 303
    assert (await alice.get("/w/")).status_code == 303
    upload = await alice.post(
        "/api/audio", files={"file": ("a.mp3", recording, "audio/mpeg")}, headers=bearer(token)
    )
    assert upload.status_code == 401
    login = await alice.get("/w/login")
    form = {"csrf": csrf(login.text), "name": "alice", "password": SECRET, "next": "/w/"}
    assert (await alice.post("/w/login", data=form)).status_code == 403
    await alice.aclose()


async def test_deleting_a_person_asks_first_then_removes_them_and_their_recordings(
    runtime: Runtime, owner: httpx.AsyncClient, recording: bytes
) -> None:
    """Delete on People shows what goes; the CSRF-checked post removes person, token, job."""
    alice = await person(runtime, owner, "alice")
    token = await make_token(alice)
    job_id = await send(alice, recording, token)
    (found,) = [p for p in await runtime.people.list_people() if p.name == "alice"]
    people = await owner.get("/admin/people")
    assert f"/admin/people/{found.id}/delete" in people.text
    confirm = await owner.get(f"/admin/people/{found.id}/delete")
    assert confirm.status_code == 200
    assert "1 recording," in confirm.text
    assert (await runtime.services.jobs.get(job_id)).owner == f"{PERSON_OWNER_PREFIX}{found.id}"
    refused = await owner.post(f"/admin/people/{found.id}/delete", data={})
    assert refused.status_code == 403
    assert await runtime.people.get_person(found.id) is not None
    answer = await owner.post(f"/admin/people/{found.id}/delete", data={"csrf": csrf(confirm.text)})
    assert answer.status_code == 303
    assert await runtime.people.get_person(found.id) is None
    assert (await alice.get("/w/")).status_code == 303
    assert (await alice.get("/v1/models", headers=bearer(token))).status_code == 401
    with pytest.raises(JobNotFound):
        await runtime.services.jobs.get(job_id)
    again = await owner.post(f"/admin/people/{found.id}/delete", data={"csrf": csrf(confirm.text)})
    assert again.status_code == 404
    me = await runtime.people.find_owner()
    assert me is not None
    assert (await owner.get(f"/admin/people/{me.id}/delete")).status_code == 403
    kept = await owner.post(f"/admin/people/{me.id}/delete", data={"csrf": csrf(confirm.text)})
    assert kept.status_code == 403
    assert await runtime.people.find_owner() == me
    await alice.aclose()


async def test_revoked_token_stops(
    runtime: Runtime, owner: httpx.AsyncClient, recording: bytes
) -> None:
    """A revoked token is refused on the next request."""
    alice = await person(runtime, owner, "alice")
    token = await make_token(alice)
    found = await runtime.people.find_person("alice")
    assert found is not None
    (made,) = await runtime.people.list_tokens(found.id)
    page = await alice.get("/w/tokens")
    answer = await alice.post(f"/w/tokens/{made.id}/revoke", data={"csrf": csrf(page.text)})
    assert answer.status_code == 303
    assert (await alice.get("/v1/models", headers=bearer(token))).status_code == 401
    await alice.aclose()


async def test_forms_without_the_csrf_token_are_refused(
    runtime: Runtime, owner: httpx.AsyncClient
) -> None:
    """Every workspace and people form refuses a post without its CSRF token, changing nothing."""
    alice = await person(runtime, owner, "alice")
    assert (await alice.post("/w/tokens", data={"label": "x"})).status_code == 403
    found = await runtime.people.find_person("alice")
    assert found is not None
    assert await runtime.people.list_tokens(found.id) == []
    assert (await alice.post("/w/logout", data={})).status_code == 403
    assert (await alice.get("/w/")).status_code == 200
    assert (await owner.post("/admin/people", data={"name": "mallory"})).status_code == 403
    token = await invite(owner, "frank")
    async with in_process_client(runtime) as client:
        form = {"token": token, "password": SECRET, "confirm": SECRET}
        assert (await client.post("/w/invite", data=form)).status_code == 403
    await alice.aclose()


async def test_pages_carry_the_panels_security_headers(
    runtime: Runtime, owner: httpx.AsyncClient
) -> None:
    """Every workspace answer has the strict CSP (own script files only), and no framing."""
    alice = await person(runtime, owner, "alice")
    for path in ("/w/", "/w/tokens", "/w/login", "/w/recordings/nope", "/w/static/workspace.css"):
        answer = await alice.get(path)
        policy = answer.headers["content-security-policy"]
        assert "default-src 'none'" in policy
        assert "script-src 'self';" in policy
        assert "unsafe-inline" not in policy
        assert "unsafe-eval" not in policy
        assert answer.headers["x-frame-options"] == "DENY"
    page = await alice.get("/w/")
    # Scripts come only from the workspace's own files (the page's words, the live list's),
    # never inline.
    scripts = re.findall(r"<script([^>]*)>(.*?)</script>", page.text)
    assert [re.search(r'src="([^"]+)"', tag)[1] for tag, _ in scripts if "src=" in tag] == [
        "/w/static/strings.js",
        "/w/static/live.js",
    ]
    assert all("src=" in tag and not body.strip() for tag, body in scripts)
    await alice.aclose()


async def test_session_cookie_is_httponly_and_one_for_the_whole_service(
    runtime: Runtime, owner: httpx.AsyncClient
) -> None:
    """The one session cookie is HttpOnly, SameSite, sent to ``/`` and the panel alike."""
    token = await invite(owner, "gina")
    async with in_process_client(runtime) as client:
        answer = await set_password(client, token, SECRET)
        (cookie,) = [
            c for c in answer.headers.get_list("set-cookie") if c.startswith("transcriber_session=")
        ]
        assert "HttpOnly" in cookie
        assert "SameSite=Lax" in cookie
        assert "Path=/;" in cookie


@pytest.fixture
async def static_runtime(tmp_path: Path, clock: ManualClock) -> AsyncIterator[Runtime]:
    """A runtime whose ``[http] api_tokens`` holds one static token."""
    config = Config(
        storage=StorageConfig(data_dir=tmp_path / "static"),
        http=HttpConfig(host="127.0.0.1", port=8124, api_tokens=(STATIC,)),
    )
    built = await build(config, clock=clock)
    yield built
    await built.close()


async def test_static_tokens_keep_working_beside_peoples(
    static_runtime: Runtime, recording: bytes
) -> None:
    """A static token sends jobs keyed by its SHA-256, a person's apart; no token is a 401."""
    await make_owner(static_runtime)
    async with in_process_client(static_runtime) as owner:
        page = await owner.get("/admin/login")
        form = {
            "csrf": csrf(page.text),
            "name": OWNER_NAME,
            "password": PASSWORD,
            "next": "/admin/",
        }
        assert (await owner.post("/admin/login", data=form)).status_code == 303
        alice = await person(static_runtime, owner, "alice")
    token = await make_token(alice)
    static_job = await send(alice, recording, STATIC)
    person_job = await send(alice, recording, token)
    jobs = static_runtime.services.jobs
    assert (await jobs.get(static_job)).owner == hashlib.sha256(STATIC.encode()).hexdigest()
    found = await static_runtime.people.find_person("alice")
    assert found is not None
    assert (await jobs.get(person_job)).owner == PERSON_OWNER_PREFIX + found.id
    assert (await alice.get(f"/api/status/{static_job}", headers=bearer(token))).status_code == 404
    assert (await alice.get(f"/api/status/{person_job}", headers=bearer(STATIC))).status_code == 404
    assert (await alice.get(f"/api/status/{person_job}")).status_code == 401
    home = await alice.get("/w/")
    assert person_job in home.text
    assert static_job not in home.text
    await alice.aclose()


async def test_the_people_page_is_the_owners_alone(runtime: Runtime) -> None:
    """An anonymous visitor is sent to the admin login, and an anonymous invite is refused."""
    async with in_process_client(runtime) as client:
        answer = await client.get("/admin/people")
        assert answer.status_code == 303
        assert answer.headers["location"].startswith("/admin/login")
        assert (await client.post("/admin/people", data={"name": "x"})).status_code == 403
        assert (await client.post("/admin/people/abc/disable", data={})).status_code == 403
    assert await runtime.people.list_people() == []


async def test_a_taken_or_bad_name_is_refused(runtime: Runtime, owner: httpx.AsyncClient) -> None:
    """The owner is told when a name is taken or malformed; nothing is stored."""
    await invite(owner, "alice")
    page = await owner.get("/admin/people")
    taken = await owner.post("/admin/people", data={"csrf": csrf(page.text), "name": "alice"})
    assert taken.status_code == 409
    assert "already has that name" in taken.text
    bad = await owner.post("/admin/people", data={"csrf": csrf(page.text), "name": "<b>"})
    assert bad.status_code == 400
    assert sorted(p.name for p in await runtime.people.list_people()) == ["alice", "owner"]


async def test_wrong_passwords_meet_the_back_off(
    runtime: Runtime, owner: httpx.AsyncClient
) -> None:
    """A second wrong sign-in right after the first waits (429 with Retry-After)."""
    alice = await person(runtime, owner, "alice")
    page = await alice.get("/w/")
    await alice.post("/w/logout", data={"csrf": csrf(page.text)})
    login = await alice.get("/w/login")
    form = {"csrf": csrf(login.text), "name": "alice", "password": "wrong password!", "next": "/w/"}
    assert (await alice.post("/w/login", data=form)).status_code == 403
    answer = await alice.post("/w/login", data={**form, "password": SECRET})
    assert answer.status_code == 429
    assert int(answer.headers["retry-after"]) >= 1
    await alice.aclose()


async def test_an_idle_session_ends(
    runtime: Runtime, owner: httpx.AsyncClient, clock: ManualClock
) -> None:
    """A session unused for longer than the idle time sends the person to sign in again."""
    alice = await person(runtime, owner, "alice")
    assert (await alice.get("/w/")).status_code == 200
    clock.advance(timedelta(hours=1, seconds=1))
    answer = await alice.get("/w/tokens")
    assert answer.status_code == 303
    assert answer.headers["location"].startswith("/w/login")
    await alice.aclose()


async def test_sign_in_never_leaves_the_workspace(
    runtime: Runtime, owner: httpx.AsyncClient
) -> None:
    """The ``next`` of the sign-in form goes only to a workspace path, never another site."""
    alice = await person(runtime, owner, "alice")
    page = await alice.get("/w/")
    await alice.post("/w/logout", data={"csrf": csrf(page.text)})
    login = await alice.get("/w/login")
    form = {
        "csrf": csrf(login.text),
        "name": "alice",
        "password": SECRET,
        "next": "//evil.example/",
    }
    answer = await alice.post("/w/login", data=form)
    assert answer.status_code == 303
    assert answer.headers["location"] == "/w/"
    await alice.aclose()


async def test_startup_sweeps_expired_person_sessions(
    runtime: Runtime, owner: httpx.AsyncClient, clock: ManualClock
) -> None:
    """Sessions that expired while the service was stopped are deleted when it starts."""
    alice = await person(runtime, owner, "alice")
    (found,) = [p for p in await runtime.people.list_people() if not p.is_owner]
    clock.advance(timedelta(days=2))
    await prepare_admin(runtime)
    assert await runtime.people.delete_expired_person_sessions(now=clock.now()) == 0
    assert (await alice.get("/w/")).status_code == 303
    assert found.is_active
    await alice.aclose()


async def test_the_sign_in_page_gets_every_stylesheet_it_links(runtime: Runtime) -> None:
    """The workspace links the admin panel's stylesheet and its own: both served to anyone."""
    async with in_process_client(runtime) as client:
        page = await client.get("/w/login")
        links = re.findall(r'<link rel="stylesheet" href="([^"]+)"', page.text)
        assert links == ["/admin/static/admin.css", "/w/static/workspace.css"]
        for href in links:
            sheet = await client.get(href)
            assert (sheet.status_code, sheet.headers["content-type"].split(";")[0]) == (
                200,
                "text/css",
            )


async def _sign_in(
    client: httpx.AsyncClient, door: str, name: str, password: str, **extra: str
) -> httpx.Response:
    """Post the sign-in form shown at ``door`` to where it says; the answer."""
    page = await client.get(door)
    assert page.status_code == 200, page.text
    assert 'action="/w/login"' in page.text
    form = {"csrf": csrf(page.text), "name": name, "password": password, **extra}
    return await client.post("/w/login", data=form)


async def test_one_form_signs_in_people_and_the_owner_and_the_role_decides_where(
    runtime: Runtime, owner: httpx.AsyncClient
) -> None:
    """``/``, ``/w/login`` and ``/admin/login`` are one form; the owner lands on the panel."""
    alice = await person(runtime, owner, "alice")
    await alice.aclose()
    for door in ("/", "/w/login", "/admin/login"):
        async with in_process_client(runtime) as client:
            mine = await _sign_in(client, door, "alice", SECRET)
            assert (mine.status_code, mine.headers["location"]) == (303, "/w/")
            assert (await client.get("/")).headers["location"] == "/w/"
        async with in_process_client(runtime) as client:
            boss = await _sign_in(client, door, OWNER_NAME, PASSWORD)
            assert (boss.status_code, boss.headers["location"]) == (303, "/admin/")
            assert (await client.get("/")).headers["location"] == "/admin/"
            # The owner's own recordings are a workspace like anyone's.
            assert (await client.get("/w/")).status_code == 200
    async with in_process_client(runtime) as client:
        wrong = await _sign_in(client, "/", OWNER_NAME, SECRET)
        assert wrong.status_code == 403
        # One back-off for both roles: the next try, whoever it names, waits.
        held = await _sign_in(client, "/", "alice", SECRET)
        assert held.status_code == 429


async def test_a_person_cannot_reach_the_admin_panel(
    runtime: Runtime, owner: httpx.AsyncClient
) -> None:
    """A signed-in person is sent home from every panel page; its posts and downloads are 403."""
    alice = await person(runtime, owner, "alice")
    for path in ("/admin/", "/admin/people", "/admin/account"):
        sent = await alice.get(path)
        assert sent.status_code == 303
        home = await alice.get(sent.headers["location"])
        assert (home.status_code, home.headers["location"]) == (303, "/w/")
    page = await alice.get("/w/tokens")
    invite = await alice.post("/admin/people", data={"csrf": csrf(page.text), "name": "mallory"})
    assert invite.status_code == 403
    assert await runtime.people.find_person("mallory") is None
    assert (await alice.get("/admin/files/anything")).status_code == 403
    await alice.post("/w/logout", data={"csrf": csrf(page.text)})
    # Asked for a panel page, she signs in and lands on her own list.
    landed = await _sign_in(alice, "/admin/login", "alice", SECRET, next="/admin/people")
    assert landed.headers["location"] == "/w/"
    await alice.aclose()
