"""The admin panel's account helpers, and the panel in-process where time must be moved by hand."""

from __future__ import annotations

import asyncio
import logging
import re
from datetime import timedelta

import httpx
import pytest

from tests.support.admin import OWNER_NAME, T0, in_process_client, make_owner
from transcriber_adapters.memory import ManualClock
from transcriber_app.bootstrap import Runtime
from transcriber_app.web.auth import (
    SETUP_LINK_LIFETIME,
    SetupLink,
    client_address,
    hash_password,
    password_problem,
    prepare_admin,
    setup_url,
    trusted_networks,
    verify_password,
)
from transcriber_app.web.sessions import hash_id

PASSWORD = "correct horse battery staple"
_CSRF = re.compile(r'name="csrf" value="([^"]+)"')


# -- pure helpers ------------------------------------------------------------------------


async def test_password_hash_verifies_only_its_password() -> None:
    """The stored hash accepts the password it was made from and nothing else."""
    stored = await hash_password(PASSWORD)
    assert stored.startswith("$argon2id$")
    assert PASSWORD not in stored
    assert await verify_password(stored, PASSWORD)
    assert not await verify_password(stored, PASSWORD + " ")


async def test_broken_hash_is_a_refusal_not_a_crash() -> None:
    """A hash edited by hand into garbage refuses every password instead of raising."""
    assert not await verify_password("not-a-hash", PASSWORD)


@pytest.mark.parametrize(
    ("password", "confirm", "problem"),
    [
        ("a" * 11, "a" * 11, "at least 12"),
        ("a" * 1025, "a" * 1025, "at most 1024"),
        (PASSWORD, PASSWORD.upper(), "differ"),
    ],
)
def test_setup_password_rules(password: str, confirm: str, problem: str) -> None:
    """Short, huge or mistyped passwords are refused with a reason the owner can act on."""
    found = password_problem(password, confirm)
    assert found is not None
    assert problem in found


def test_a_good_password_passes() -> None:
    """Twelve characters typed the same twice is enough."""
    assert password_problem("a" * 12, "a" * 12) is None


def test_setup_link_accepts_its_token_until_it_expires() -> None:
    """The link works for 30 minutes with the exact token, then never."""
    link = SetupLink.new(T0)
    assert link.accepts(link.token, T0)
    assert link.accepts(link.token, T0 + SETUP_LINK_LIFETIME - timedelta(microseconds=1))
    assert not link.accepts(link.token, T0 + SETUP_LINK_LIFETIME)
    assert not link.accepts(link.token[:-1], T0)
    assert not link.accepts("", T0)
    assert link.token not in repr(link)


def test_setup_links_are_unguessable() -> None:
    """Each link has its own token of 256 random bits (43 URL-safe characters)."""
    tokens = {SetupLink.new(T0).token for _ in range(50)}
    assert len(tokens) == 50
    assert all(len(token) == 43 for token in tokens)


def test_setup_url_names_the_listener() -> None:
    """The printed link points at the configured host and port; IPv6 hosts get brackets."""
    assert setup_url("127.0.0.1", 8080, "t") == "http://127.0.0.1:8080/admin/setup?token=t"
    assert setup_url("::1", 9000, "a/b") == "http://[::1]:9000/admin/setup?token=a%2Fb"


@pytest.mark.parametrize(
    ("peer", "forwarded", "client"),
    [
        ("192.0.2.7", ["198.51.100.1"], "192.0.2.7"),
        ("10.0.0.2", [], "10.0.0.2"),
        ("10.0.0.2", ["198.51.100.1"], "198.51.100.1"),
        ("10.0.0.2", ["203.0.113.9, 198.51.100.1"], "198.51.100.1"),
        ("10.0.0.2", ["203.0.113.9", "198.51.100.1, 10.0.0.3"], "198.51.100.1"),
        ("10.0.0.2", ["not-an-address"], "10.0.0.2"),
        ("10.0.0.2", ["10.0.0.3"], "10.0.0.3"),
        ("2001:db8:1:2::7", [], "2001:db8:1:2::/64"),
        ("10.0.0.2", ["2001:db8:1:2:ffff::1"], "2001:db8:1:2::/64"),
        ("::ffff:192.0.2.7", [], "192.0.2.7"),
        (None, ["198.51.100.1"], "unknown"),
    ],
)
def test_client_address_trusts_forwarded_for_only_from_proxies(
    peer: str | None, forwarded: list[str], client: str
) -> None:
    """Only a trusted peer's X-Forwarded-For counts, read from its right end; IPv6 by /64."""
    trusted = trusted_networks(["10.0.0.0/8"])
    assert client_address(peer, forwarded, trusted) == client


# -- startup -----------------------------------------------------------------------------


def _setup_lines(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [record for record in caplog.records if record.getMessage() == "admin.setup_link"]


async def test_prepare_logs_one_link_while_no_owner_exists(
    runtime: Runtime, caplog: pytest.LogCaptureFixture
) -> None:
    """A start without owner logs the link once, valid 30 minutes from the clock's now."""
    caplog.set_level(logging.INFO, logger="transcriber.admin")
    admin = await prepare_admin(runtime)
    assert admin.setup is not None
    assert admin.setup.expires == T0 + timedelta(minutes=30)
    [line] = _setup_lines(caplog)
    assert vars(line)["url"] == f"http://127.0.0.1:8123/admin/setup?token={admin.setup.token}"


async def test_prepare_makes_no_link_once_the_owner_exists(
    runtime: Runtime, caplog: pytest.LogCaptureFixture
) -> None:
    """With an owner, startup makes no link and logs none."""
    first = await prepare_admin(runtime)
    await make_owner(runtime)
    caplog.set_level(logging.INFO, logger="transcriber.admin")
    second = await prepare_admin(runtime)
    assert first.setup is not None
    assert second.setup is None
    assert _setup_lines(caplog) == []


# -- in-process panel where the clock matters -------------------------------------------------


async def test_expired_setup_link_is_refused(runtime: Runtime, clock: ManualClock) -> None:
    """After 30 minutes the link shows no form and creates no owner, even with a form in hand."""
    admin = await prepare_admin(runtime)
    assert admin.setup is not None
    token = admin.setup.token
    async with in_process_client(runtime, admin) as client:
        form = await client.get("/admin/setup", params={"token": token})
        assert form.status_code == 200
        csrf = _CSRF.search(form.text)
        assert csrf is not None
        clock.advance(SETUP_LINK_LIFETIME)
        page = await client.get("/admin/setup", params={"token": token})
        assert page.status_code == 403
        assert "expired" in page.text
        posted = await client.post(
            "/admin/setup",
            data={
                "csrf": csrf[1],
                "token": token,
                "name": OWNER_NAME,
                "password": PASSWORD,
                "confirm": PASSWORD,
            },
        )
        assert posted.status_code == 403
    assert await runtime.people.find_owner() is None


async def _wrong(client: httpx.AsyncClient) -> httpx.Response:
    csrf = _CSRF.search((await client.get("/admin/login")).text)
    assert csrf is not None
    return await client.post(
        "/admin/login", data={"csrf": csrf[1], "name": OWNER_NAME, "password": "nope"}
    )


async def _right(client: httpx.AsyncClient) -> httpx.Response:
    csrf = _CSRF.search((await client.get("/admin/login")).text)
    assert csrf is not None
    return await client.post(
        "/admin/login", data={"csrf": csrf[1], "name": OWNER_NAME, "password": PASSWORD}
    )


async def test_login_backs_off_and_lets_the_owner_in_after_the_wait(
    runtime: Runtime, clock: ManualClock
) -> None:
    """Each wrong password doubles the wait (1, 2, 4 ... s); the owner gets in once it passes."""
    await make_owner(runtime)
    admin = await prepare_admin(runtime)
    async with in_process_client(runtime, admin) as client:
        for n in range(4):
            assert (await _wrong(client)).status_code == 403
            held = await _right(client)
            assert held.status_code == 429
            assert held.headers["retry-after"] == str(2**n)
            clock.advance(timedelta(seconds=2**n))
        assert (await _right(client)).status_code == 303


async def test_login_wait_is_capped_far_below_five_minutes(
    runtime: Runtime, clock: ManualClock
) -> None:
    """However many guesses came before, the owner waits one minute at most."""
    await make_owner(runtime)
    admin = await prepare_admin(runtime)
    async with in_process_client(runtime, admin) as client:
        for _ in range(12):
            assert (await _wrong(client)).status_code == 403
            clock.advance(timedelta(minutes=1))
        assert (await _wrong(client)).status_code == 403
        held = await _right(client)
        assert held.status_code == 429
        assert held.headers["retry-after"] == "60"
        clock.advance(timedelta(seconds=60))
        assert (await _right(client)).status_code == 303
        # Success cleared the count: the next typo costs a second again.
        await _client_logout(client)
        assert (await _wrong(client)).status_code == 403
        assert (await _right(client)).headers["retry-after"] == "1"


async def _client_logout(client: httpx.AsyncClient) -> None:
    csrf = _CSRF.search((await client.get("/admin/")).text)
    assert csrf is not None
    assert (await client.post("/admin/logout", data={"csrf": csrf[1]})).status_code == 303


async def test_parallel_guesses_meet_the_back_off(runtime: Runtime) -> None:
    """Wrong passwords sent all at once: one is checked, the rest are told to wait."""
    await make_owner(runtime)
    admin = await prepare_admin(runtime)
    async with in_process_client(runtime, admin) as client:
        csrf = _CSRF.search((await client.get("/admin/login")).text)
        assert csrf is not None
        answers = await asyncio.gather(
            *(
                client.post(
                    "/admin/login", data={"csrf": csrf[1], "name": OWNER_NAME, "password": "nope"}
                )
                for _ in range(12)
            )
        )
    statuses = sorted(answer.status_code for answer in answers)
    assert statuses == [403] + [429] * 11


async def test_idle_session_ends_after_an_hour(runtime: Runtime, clock: ManualClock) -> None:
    """A session unused for the idle time is refused and its record removed; use keeps it alive."""
    await make_owner(runtime)
    admin = await prepare_admin(runtime)
    async with in_process_client(runtime, admin) as client:
        assert (await _right(client)).status_code == 303
        for _ in range(3):
            clock.advance(admin.access.session_idle - timedelta(minutes=1))
            assert (await client.get("/admin/")).status_code == 200
        clock.advance(admin.access.session_idle)
        gone = await client.get("/admin/")
        assert gone.status_code == 303
        assert gone.headers["set-cookie"].startswith("transcriber_session=;")
        assert "Max-Age=0" in gone.headers["set-cookie"]
    assert await runtime.people.delete_expired_person_sessions(now=clock.now()) == 0


async def test_busy_session_ends_at_its_absolute_lifetime(
    runtime: Runtime, clock: ManualClock
) -> None:
    """Even a session used every few minutes ends a day after the login."""
    await make_owner(runtime)
    admin = await prepare_admin(runtime)
    async with in_process_client(runtime, admin) as client:
        assert (await _right(client)).status_code == 303
        step = timedelta(minutes=30)
        elapsed = timedelta(0)
        while elapsed + step < admin.access.session_lifetime:
            clock.advance(step)
            elapsed += step
            assert (await client.get("/admin/")).status_code == 200
        clock.advance(step)
        assert (await client.get("/admin/")).status_code == 303


async def test_login_sweeps_sessions_that_expired(runtime: Runtime, clock: ManualClock) -> None:
    """Old sessions do not pile up: each login deletes the ones that are over."""
    await make_owner(runtime)
    admin = await prepare_admin(runtime)
    async with in_process_client(runtime, admin) as first:
        assert (await _right(first)).status_code == 303
        old = first.cookies.get("transcriber_session")
    assert old is not None
    clock.advance(admin.access.session_lifetime)
    async with in_process_client(runtime, admin) as second:
        assert (await _right(second)).status_code == 303
    assert await runtime.people.get_person_session(hash_id(old)) is None


async def test_session_cookie_is_httponly_and_samesite(runtime: Runtime) -> None:
    """The cookies cannot be read by scripts and are not sent cross-site; one for the service."""
    await make_owner(runtime)
    admin = await prepare_admin(runtime)
    async with in_process_client(runtime, admin) as client:
        page = await client.get("/admin/login")
        logged_in = await _right(client)
    form_cookie = page.headers["set-cookie"].lower()
    assert form_cookie.startswith("transcriber_form=")
    cookie = logged_in.headers["set-cookie"].lower()
    assert cookie.startswith("transcriber_session=")
    for each in (form_cookie, cookie):
        assert "httponly" in each
        assert "samesite=lax" in each
        assert "path=/;" in each
    assert f"max-age={24 * 3600}" in cookie
    assert page.headers["cache-control"] == "no-store"
    assert "frame-ancestors 'none'" in page.headers["content-security-policy"]


async def test_anonymous_visits_store_no_session(runtime: Runtime) -> None:
    """Opening the login page many times adds nothing to the database: no table to flood."""
    admin = await prepare_admin(runtime)
    async with in_process_client(runtime, admin) as client:
        for _ in range(20):
            client.cookies.clear()
            assert (await client.get("/admin/login")).status_code == 200
    assert await runtime.people.delete_expired_person_sessions(now=T0 + timedelta(days=365)) == 0
