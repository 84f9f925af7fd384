"""The admin panel's account helpers, and the panel in-process where time must be moved by hand."""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import attrs
import httpx
import pytest

from transcriber_adapters.memory import ManualClock
from transcriber_app.bootstrap import Runtime, build
from transcriber_app.config import Config, HttpConfig, StorageConfig
from transcriber_app.web import create_app
from transcriber_app.web.admin import revive_state
from transcriber_app.web.auth import (
    SETUP_LINK_LIFETIME,
    AdminState,
    LoginThrottle,
    SetupLink,
    hash_password,
    password_problem,
    prepare_admin,
    setup_url,
    verify_password,
)
from transcriber_contracts.job_repository import make_job
from transcriber_core.entities import State

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
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


def test_throttle_holds_a_client_after_five_failures() -> None:
    """Five wrong passwords in the window make the sixth attempt wait; others are not held."""
    throttle = LoginThrottle(max_failures=5, window=timedelta(minutes=5))
    for n in range(5):
        assert throttle.retry_after("1.2.3.4", T0) is None
        throttle.failed("1.2.3.4", T0 + timedelta(seconds=n))
    assert throttle.retry_after("1.2.3.4", T0 + timedelta(seconds=10)) == timedelta(
        minutes=5, seconds=-10
    )
    assert throttle.retry_after("5.6.7.8", T0) is None
    assert throttle.retry_after("1.2.3.4", T0 + timedelta(minutes=5)) is None


def test_throttle_forgets_a_client_that_got_in() -> None:
    """A right password clears the client's failures."""
    throttle = LoginThrottle(max_failures=2)
    throttle.failed("c", T0)
    throttle.succeeded("c")
    throttle.failed("c", T0)
    assert throttle.retry_after("c", T0) is None


def test_throttle_memory_is_bounded() -> None:
    """A flood of addresses cannot grow the throttle without limit."""
    throttle = LoginThrottle(max_clients=100)
    for n in range(1000):
        throttle.failed(f"10.0.{n // 256}.{n % 256}", T0)
    assert len(throttle._failures) == 100


def test_revive_restarts_at_the_first_missing_result() -> None:
    """A revived job keeps the recognizer's operation or the converted audio it already has."""
    job = make_job(state=State.DEAD)
    assert revive_state(job) is State.CONVERT
    assert revive_state(attrs.evolve(job, converted_file_id="c")) is State.RECOGNIZE
    assert revive_state(attrs.evolve(job, converted_file_id="c", operation_id="o")) is State.CHECK


# -- startup -----------------------------------------------------------------------------


@pytest.fixture
def clock() -> ManualClock:
    """The runtime's clock, moved by the test."""
    return ManualClock(T0)


@pytest.fixture
async def runtime(tmp_path: Path, clock: ManualClock) -> AsyncIterator[Runtime]:
    """A built runtime on a fresh data dir with a clock the test moves; no workers run."""
    config = Config(
        storage=StorageConfig(data_dir=tmp_path / "data"),
        http=HttpConfig(host="127.0.0.1", port=8123),
    )
    built = await build(config, clock=clock)
    yield built
    await built.close()


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
    """With an owner, startup makes no link and logs none; the session key stays the same."""
    first = await prepare_admin(runtime)
    await runtime.owners.create_owner(await hash_password(PASSWORD), now=T0)
    caplog.set_level(logging.INFO, logger="transcriber.admin")
    second = await prepare_admin(runtime)
    assert second.setup is None
    assert _setup_lines(caplog) == []
    assert second.session_secret == first.session_secret


# -- in-process panel where the clock matters -------------------------------------------------


async def _client(runtime: Runtime, admin: AdminState) -> httpx.AsyncClient:
    app = create_app(runtime, admin=admin)
    return httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app, client=("192.0.2.7", 50000)),
        base_url="http://127.0.0.1",
    )


async def test_expired_setup_link_is_refused(runtime: Runtime, clock: ManualClock) -> None:
    """After 30 minutes the link shows no form and creates no owner, even with a form in hand."""
    admin = await prepare_admin(runtime)
    assert admin.setup is not None
    token = admin.setup.token
    async with await _client(runtime, admin) as client:
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
            data={"csrf": csrf[1], "token": token, "password": PASSWORD, "confirm": PASSWORD},
        )
        assert posted.status_code == 403
    assert await runtime.owners.get_owner_hash() is None


async def test_login_is_throttled_after_repeated_failures(
    runtime: Runtime, clock: ManualClock
) -> None:
    """Five wrong passwords from one address make the next try answer 429 with Retry-After."""
    await runtime.owners.create_owner(await hash_password(PASSWORD), now=T0)
    admin = await prepare_admin(runtime)
    admin.throttle = LoginThrottle(max_failures=5, window=timedelta(minutes=5))
    async with await _client(runtime, admin) as client:
        csrf = _CSRF.search((await client.get("/admin/login")).text)
        assert csrf is not None
        for _ in range(5):
            wrong = await client.post("/admin/login", data={"csrf": csrf[1], "password": "nope"})
            assert wrong.status_code == 403
        held = await client.post("/admin/login", data={"csrf": csrf[1], "password": PASSWORD})
        assert held.status_code == 429
        assert int(held.headers["retry-after"]) > 0
        clock.advance(timedelta(minutes=5))
        passed = await client.post("/admin/login", data={"csrf": csrf[1], "password": PASSWORD})
        assert passed.status_code == 303


async def test_parallel_guesses_meet_the_throttle(runtime: Runtime) -> None:
    """Wrong passwords sent all at once are held after five, not all checked in parallel."""
    await runtime.owners.create_owner(await hash_password(PASSWORD), now=T0)
    admin = await prepare_admin(runtime)
    admin.throttle = LoginThrottle(max_failures=5, window=timedelta(minutes=5))
    async with await _client(runtime, admin) as client:
        csrf = _CSRF.search((await client.get("/admin/login")).text)
        assert csrf is not None
        answers = await asyncio.gather(
            *(
                client.post("/admin/login", data={"csrf": csrf[1], "password": "nope"})
                for _ in range(12)
            )
        )
    statuses = sorted(answer.status_code for answer in answers)
    assert statuses == [403] * 5 + [429] * 7


async def test_session_cookie_is_httponly_samesite_and_scoped_to_admin(runtime: Runtime) -> None:
    """The session cookie cannot be read by scripts, is not sent cross-site, and stays in /admin."""
    admin = await prepare_admin(runtime)
    async with await _client(runtime, admin) as client:
        answer = await client.get("/admin/login")
    cookie = answer.headers["set-cookie"].lower()
    assert "httponly" in cookie
    assert "samesite=lax" in cookie
    assert "path=/admin;" in cookie
    assert f"max-age={7 * 24 * 3600}" in cookie
    assert answer.headers["cache-control"] == "no-store"
    assert "frame-ancestors 'none'" in answer.headers["content-security-policy"]
