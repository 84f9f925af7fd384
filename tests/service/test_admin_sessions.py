"""Admin sessions through the real service process (reference: Limits, ADR 17).

Each test replays what the red team did: a cookie copied before logout, a
cookie left in another browser before a password change, a login throttle
that anyone behind a proxy could trip for the owner, error pages without
the panel's security headers.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest

from tests.support.admin import (
    OWNER_NAME,
    PASSWORD,
    admin_client,
    create_owner,
    csrf_of,
    direct_access,
    log_in,
    log_in_waiting,
    owner_client,
    post_form,
    service_with_owner,
    setup_link,
    write_job,
)
from tests.support.service import Service, running_service
from transcriber_adapters.sqlite import SqliteLoginThrottle
from transcriber_app.bootstrap import DATABASE_NAME
from transcriber_core.entities import LoginFailures, State

pytestmark = pytest.mark.slow

#: The session cookie's name.
COOKIE = "transcriber_session"
#: A new password for the change-password tests.
NEW_PASSWORD = "a different passphrase entirely"
#: Headers every admin answer carries, error pages included.
SECURITY_HEADERS = (
    "cache-control",
    "content-security-policy",
    "referrer-policy",
    "x-content-type-options",
    "x-frame-options",
)


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Service]:
    """One running service whose owner exists; it trusts no proxy."""
    with service_with_owner(tmp_path_factory.mktemp("sessions")) as running:
        yield running


@pytest.fixture
async def owner(service: Service) -> AsyncIterator[httpx.AsyncClient]:
    """A client logged in as the owner."""
    async with owner_client(service) as client:
        yield client


def _replay(service: Service, cookie: str) -> httpx.AsyncClient:
    """A second client that holds nothing but a copy of ``cookie``."""
    client = admin_client(service)
    client.cookies.set(COOKIE, cookie, domain="127.0.0.1", path="/")
    return client


async def test_a_cookie_copied_before_logout_is_dead_after_it(
    service: Service, owner: httpx.AsyncClient
) -> None:
    """Logout ends the session itself: a copy of the cookie reads no page and changes no job."""
    job = await write_job(service, state=State.DEAD, error="x", attempts=5)
    stolen = owner.cookies.get(COOKIE)
    assert stolen
    async with _replay(service, stolen) as thief:
        page = await thief.get(f"/admin/jobs/{job.id}")
        assert page.status_code == 200
        form = {"state": "convert", "from_state": "dead"}
        assert (await post_form(owner, "/admin/", "/admin/logout")).status_code == 303
        assert (await thief.get(f"/admin/jobs/{job.id}")).status_code == 303
        assert (await thief.get("/admin/")).status_code == 303
        # The thief read the CSRF token from a page before the logout, as a browser would.
        changed = await thief.post(
            f"/admin/jobs/{job.id}/state", data={**form, "csrf": csrf_of(page.text)}
        )
        assert changed.status_code == 403
    async with direct_access(service) as (repo, _):
        assert (await repo.get(job.id)).state is State.DEAD


async def test_the_cookie_holds_only_a_random_id_and_the_database_only_its_hash(
    service: Service, owner: httpx.AsyncClient
) -> None:
    """Nothing in the cookie is signed data, and the database never holds the cookie itself."""
    cookie = owner.cookies.get(COOKIE)
    assert cookie
    assert len(cookie) >= 22  # 128 bits in URL-safe base64
    assert "." not in cookie
    rows = service.query("SELECT id_hash FROM person_sessions")
    assert rows
    assert all(cookie not in str(row) for row in rows)
    assert service.query("SELECT name FROM sqlite_master WHERE name = 'secrets'") == []


async def test_changing_the_password_ends_every_other_session(tmp_path: Path) -> None:
    """A password change logs out every other browser; the one that changed it stays in."""
    with running_service(tmp_path) as service:
        async with admin_client(service) as first, admin_client(service) as second:
            await create_owner(first, setup_link(service))
            assert (await log_in(second)).status_code == 303
            assert (await second.get("/admin/")).status_code == 200
            changed = await post_form(
                first,
                "/admin/account",
                "/admin/account/password",
                current=PASSWORD,
                password=NEW_PASSWORD,
                confirm=NEW_PASSWORD,
            )
            assert changed.status_code == 303, changed.text
            assert (await first.get("/admin/")).status_code == 200
            assert (await second.get("/admin/")).status_code == 303
        async with admin_client(service) as third, admin_client(service) as fourth:
            assert (await log_in(third, NEW_PASSWORD)).status_code == 303
            assert (await log_in(fourth, PASSWORD)).status_code == 403
        assert "NEW_PASSWORD" not in service.logs()
        assert NEW_PASSWORD not in service.logs()


async def test_a_wrong_current_password_changes_nothing(
    service: Service, owner: httpx.AsyncClient
) -> None:
    """The change-password form wants the current password: a stolen session cannot lock out."""
    answer = await post_form(
        owner,
        "/admin/account",
        "/admin/account/password",
        current="not the password at all",
        password=NEW_PASSWORD,
        confirm=NEW_PASSWORD,
    )
    assert answer.status_code == 403
    assert (await owner.get("/admin/")).status_code == 200
    async with admin_client(service) as other:
        assert (await log_in_waiting(other, PASSWORD)).status_code == 303


async def _hold(service: Service, client: str) -> None:
    """Give ``client`` a long back-off (ten failures just now), straight into the database."""
    store = await SqliteLoginThrottle.open(service.data_dir / DATABASE_NAME)
    try:
        held = LoginFailures(client=client, count=10, last=datetime.now(UTC))
        previous = await store.get_login_failures(client)
        assert await store.save_login_failures(held, previous=previous)
    finally:
        await store.close()


async def _release(service: Service, client: str) -> None:
    """Forget ``client``'s failures, so later tests on the shared service start clean."""
    store = await SqliteLoginThrottle.open(service.data_dir / DATABASE_NAME)
    try:
        await store.clear_login_failures(client)
    finally:
        await store.close()


async def _attempt(
    client: httpx.AsyncClient,
    chain: str,
    password: str = "wrong",  # noqa: S107 - a wrong one
) -> int:
    """A login post that says it was forwarded for ``chain``; the answer's status."""
    token = csrf_of((await client.get("/admin/login")).text)
    answer = await client.post(
        "/admin/login",
        data={"csrf": token, "name": OWNER_NAME, "password": password},
        headers={"X-Forwarded-For": chain},
    )
    return answer.status_code


async def test_forwarded_for_is_ignored_from_an_untrusted_peer(service: Service) -> None:
    """Without trusted proxies, X-Forwarded-For cannot pick the address the throttle counts."""
    await _hold(service, "198.51.100.1")
    async with admin_client(service) as client:
        # Counted as 127.0.0.1, which is not held: the header named a held client in vain...
        assert await _attempt(client, "198.51.100.1", PASSWORD) == 303
    await _hold(service, "127.0.0.1")
    async with admin_client(service) as client:
        # ...and cannot escape the peer's own back-off by naming another.
        assert await _attempt(client, "198.51.100.2", PASSWORD) == 429
    await _release(service, "127.0.0.1")


async def test_forwarded_for_names_the_client_behind_a_trusted_proxy(tmp_path: Path) -> None:
    """From a proxy in ``forwarded_allow_ips`` each forwarded client has its own back-off."""
    config = {"http": {"forwarded_allow_ips": ["127.0.0.0/8"]}}
    with running_service(tmp_path, config=config) as service:
        async with admin_client(service) as client:
            await create_owner(client, setup_link(service))
        await _hold(service, "198.51.100.1")
        async with admin_client(service) as client:
            assert await _attempt(client, "198.51.100.1", PASSWORD) == 429
            # A client cannot escape by writing a hop in front: the proxy appends the real one.
            assert await _attempt(client, "203.0.113.9, 198.51.100.1", PASSWORD) == 429
            assert await _attempt(client, "198.51.100.2", PASSWORD) == 303
        async with admin_client(service) as client:
            # The right end of the chain is the client the proxy heard from.
            assert await _attempt(client, "198.51.100.1, 198.51.100.3", PASSWORD) == 303


@pytest.mark.parametrize(
    ("method", "path", "status"),
    [
        ("GET", "/admin/no-such-page", 404),
        ("GET", "/admin/static/no-such.css", 404),
        ("GET", "/admin/logout", 405),
        ("PUT", "/admin/", 405),
        ("DELETE", "/admin/jobs/x", 405),
    ],
)
async def test_admin_error_answers_carry_the_security_headers(
    service: Service, method: str, path: str, status: int
) -> None:
    """404 and 405 under /admin are framed, cached and sniffed no more than the pages are."""
    async with admin_client(service) as client:
        answer = await client.request(method, path)
    assert answer.status_code == status
    for header in SECURITY_HEADERS:
        assert header in answer.headers, header
    assert answer.headers["cache-control"] == "no-store"
    assert answer.headers["x-frame-options"] == "DENY"
