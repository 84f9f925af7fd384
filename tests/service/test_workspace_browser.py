"""The workspace in a real browser: invite → password → token → upload via /api → one's list.

Headless Debian Chromium driven by Playwright, as the admin panel's browser
test (``executable_path``, never Playwright's own download). Each person and
the owner get a browser context of their own (their own cookies). Checks:
a short password is refused with a clear message; a person's token makes
jobs listed for that person only; a second person sees none of it (list,
page by URL, status by API → 404); a post without the CSRF token is
refused; the owner's Disable stops the session and the token at once; every
page carries the strict CSP (scripts only from /w/static, never inline).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import TYPE_CHECKING

import httpx
import pytest

from tests.service.test_admin_browser import CHROMIUM, CHROMIUM_ARGS, SCREENSHOT_DIR
from tests.support.admin import PASSWORD, setup_link
from tests.support.media import tone
from tests.support.service import Service, running_service

if TYPE_CHECKING:
    from playwright.async_api import Browser, BrowserContext, Page

pytestmark = pytest.mark.slow

#: The persons' password: long enough.
SECRET = "a long enough password"
#: How long the uploaded job may take to show done in the list.
DONE_WITHIN_MS = 30_000


@contextlib.asynccontextmanager
async def headless_chromium(*extra_args: str) -> AsyncIterator[Browser]:
    """Headless Debian Chromium with ``extra_args``; fails the test without it or Playwright."""
    if not CHROMIUM.exists():
        pytest.fail(f"{CHROMIUM} is not installed; apt-get install chromium")
    try:
        from playwright.async_api import async_playwright  # noqa: PLC0415 - optional in dev
    except ImportError:
        pytest.fail("the playwright package is not installed")
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(
            executable_path=str(CHROMIUM), args=[*CHROMIUM_ARGS, *extra_args], headless=True
        )
        try:
            yield browser
        finally:
            await browser.close()


@pytest.fixture
async def chromium() -> AsyncIterator[Browser]:
    """Headless Debian Chromium; contexts made from it share nothing; fails without it."""
    async with headless_chromium() as browser:
        yield browser


async def _context(browser: Browser) -> BrowserContext:
    context = await browser.new_context(viewport={"width": 1280, "height": 800})
    context.set_default_timeout(10_000)
    return context


async def _snapshot(page: Page, name: str) -> None:
    if SCREENSHOT_DIR:
        await page.screenshot(path=str(Path(SCREENSHOT_DIR) / f"{name}.png"), full_page=True)


async def _owner(browser: Browser, service: Service) -> Page:
    """The owner, set up with the startup link and on the People page."""
    page = await (await _context(browser)).new_page()
    await page.goto(setup_link(service))
    await page.fill("#password", PASSWORD)
    await page.fill("#confirm", PASSWORD)
    await page.click("button[type=submit]")
    await page.wait_for_url("**/admin/")
    await page.click("text=People")
    await page.wait_for_url("**/admin/people")
    return page


async def _invite(owner: Page, name: str) -> str:
    """Invite ``name`` on the People page; the link, shown once."""
    await owner.goto(owner.url.split("/admin/")[0] + "/admin/people")
    await owner.get_by_label("Name").fill(name)
    await owner.get_by_role("button", name="Invite").click()
    link = (await owner.text_content("#invite-link") or "").strip()
    assert "/w/invite?token=" in link
    return link


async def _join(browser: Browser, link: str) -> Page:
    """Open the invite link in a fresh context and set the password; signed in on the list."""
    page = await (await _context(browser)).new_page()
    await page.goto(link)
    await page.get_by_label("Password (at least 12 characters)").fill(SECRET)
    await page.get_by_label("The password again").fill(SECRET)
    await page.get_by_role("button", name="Set the password").click()
    await page.wait_for_url("**/w/")
    return page


async def _make_token(page: Page, label: str) -> str:
    await page.get_by_role("navigation").get_by_role("link", name="API tokens").click()
    await page.wait_for_url("**/w/tokens")
    await page.get_by_label("Label").fill(label)
    await page.get_by_role("button", name="Make a token").click()
    token = (await page.text_content("#new-token") or "").strip()
    assert token.startswith("tsp_")
    return token


async def _alice_with_a_done_recording(
    browser: Browser, service: Service, recording: bytes
) -> tuple[Page, Page, str]:
    """The owner; Alice, invited and signed in; her recording sent with a token, done: its id."""
    owner = await _owner(browser, service)
    alice = await _join(browser, await _invite(owner, "alice"))
    headers = {"Authorization": f"Bearer {await _make_token(alice, 'browser test')}"}
    async with httpx.AsyncClient(base_url=service.base_url, timeout=10.0) as api:
        sent = await api.post(
            "/api/audio", files={"file": ("rec.mp3", recording, "audio/mpeg")}, headers=headers
        )
        assert sent.status_code == 202, sent.text
    job_id = sent.json()["job_id"]
    done = await asyncio.to_thread(service.wait_for_job, job_id, headers=headers)
    assert done["state"] == "done"
    return owner, alice, job_id


async def test_invite_token_upload_isolation_and_disable_in_a_browser(
    chromium: Browser, tmp_path: Path
) -> None:
    """The first slice of the workspace works end to end in Chromium, and keeps people apart."""
    recording = tone(tmp_path / "tone.mp3", 2.0).read_bytes()
    with running_service(tmp_path / "service") as service:
        owner = await _owner(chromium, service)
        link = await _invite(owner, "alice")
        await _snapshot(owner, "workspace-admin-people")

        # A short password is refused, saying why, and the link still works afterwards.
        alice = await (await _context(chromium)).new_page()
        answer = await alice.goto(link)
        assert answer is not None
        policy = answer.headers["content-security-policy"]
        assert "default-src 'none'" in policy
        assert "script-src 'self'" in policy
        assert "unsafe-inline" not in policy
        await alice.get_by_label("Password (at least 12 characters)").fill("too short")
        await alice.get_by_label("The password again").fill("too short")
        await alice.get_by_role("button", name="Set the password").click()
        alert = alice.get_by_role("alert")
        assert "The password must have at least 12 characters." in (
            await alert.text_content() or ""
        )
        await alice.close()
        alice = await _join(chromium, link)
        assert await alice.locator("script:not([src])").count() == 0

        token = await _make_token(alice, "alice's script")
        await _snapshot(alice, "workspace-tokens")
        async with httpx.AsyncClient(base_url=service.base_url, timeout=10.0) as api:
            sent = await api.post(
                "/api/audio",
                files={"file": ("interview.mp3", recording, "audio/mpeg")},
                headers={"Authorization": f"Bearer {token}"},
            )
            assert sent.status_code == 202, sent.text
            job_id = sent.json()["job_id"]

            await alice.get_by_role("navigation").get_by_role("link", name="Recordings").click()
            await alice.wait_for_url("**/w/")
            row = alice.locator(f"a.id[title='{job_id}']")
            assert await row.count() == 1
            for _ in range(DONE_WITHIN_MS // 250):
                if "done" in (await alice.locator("tbody .badge").first.text_content() or ""):
                    break
                await alice.wait_for_timeout(250)
                await alice.reload()
            await _snapshot(alice, "workspace-recordings")
            assert (await alice.locator("tbody .badge").first.text_content()) == "done"
            assert (await alice.locator("td.duration").first.text_content()) != "—"
            await row.click()
            await alice.wait_for_url(f"**/w/recordings/{job_id}")
            assert (await alice.text_content("#job-state")) == "done"

            # A second person sees none of it.
            bob = await _join(chromium, await _invite(owner, "bob"))
            assert await bob.locator("a.id").count() == 0
            assert "No recordings yet." in (await bob.text_content("main") or "")
            opened = await bob.goto(alice.url)
            assert opened is not None
            assert opened.status == 404
            bobs = await _make_token(bob, "bob's")
            status = await api.get(
                f"/api/status/{job_id}", headers={"Authorization": f"Bearer {bobs}"}
            )
            assert status.status_code == 404
            assert (await api.get(f"/api/status/{job_id}")).status_code == 404
            await bob.goto(service.base_url + "/w/tokens")
            assert "alice" not in (await bob.text_content("main") or "")

            # A form posted without its CSRF token is refused and changes nothing.
            forged = await alice.context.request.post(
                service.base_url + "/w/tokens", form={"label": "forged"}
            )
            assert forged.status == 403
            await alice.goto(service.base_url + "/w/tokens")
            assert "forged" not in (await alice.text_content("main") or "")

            # The owner disables alice: her open session and her token stop at once.
            await owner.goto(service.base_url + "/admin/people")
            await owner.get_by_role("button", name="Disable alice").click()
            # The URL does not change: the notice on the page that follows is waited for.
            await owner.get_by_role("status").filter(has_text="Disabled").wait_for()
            await alice.reload()
            assert "/w/login" in alice.url
            again = await api.post(
                "/api/audio",
                files={"file": ("again.mp3", recording, "audio/mpeg")},
                headers={"Authorization": f"Bearer {token}"},
            )
            assert again.status_code == 401
            # Bob is untouched.
            await bob.reload()
            assert bob.url.endswith("/w/tokens")
