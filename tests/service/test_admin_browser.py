"""The admin flow in a real browser: headless Chromium from Debian, driven by Playwright.

Setup link from the service's log → set the password → sign out and in at ``/`` →
find the uploaded job by id → download its file (same length as uploaded) →
revive a dead job → see it done. Needs ``/usr/bin/chromium`` (Debian's
``chromium`` package); Playwright's own browser download is never used.
Without Chromium or Playwright the test fails, everywhere: a skipped browser
test would let a run pass with the panel untested (``scripts/test`` installs
Chromium when run as root).
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import pytest

from tests.support.admin import PASSWORD, setup_link, upload, write_job
from tests.support.media import tone
from tests.support.service import running_service
from transcriber_core.entities import State

if TYPE_CHECKING:
    from playwright.async_api import BrowserContext, Page

pytestmark = pytest.mark.slow

#: Debian's Chromium; the only browser this test runs.
CHROMIUM = Path("/usr/bin/chromium")
#: Flags for a headless browser in a container that must not phone home.
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
#: How long the revived job may take to show done.
DONE_WITHIN_MS = 30_000
#: Set to a folder to keep screenshots of the pages the test passes through.
SCREENSHOT_DIR = os.environ.get("TRANSCRIBER_TEST_SCREENSHOT_DIR")


def _unavailable(reason: str) -> NoReturn:
    pytest.fail(f"{reason}; the admin browser test needs it (apt-get install chromium)")


@pytest.fixture
async def browser(tmp_path: Path) -> AsyncIterator[BrowserContext]:
    """Headless Chromium with a new, empty profile; the test fails without it."""
    if not CHROMIUM.exists():
        _unavailable(f"{CHROMIUM} is not installed")
    try:
        from playwright.async_api import async_playwright  # noqa: PLC0415 - optional in dev
    except ImportError:
        _unavailable("the playwright package is not installed")
    async with async_playwright() as playwright:
        context = await playwright.chromium.launch_persistent_context(
            str(tmp_path / "profile"),
            executable_path=str(CHROMIUM),
            args=CHROMIUM_ARGS,
            headless=True,
            accept_downloads=True,
            viewport={"width": 1280, "height": 800},
        )
        context.set_default_timeout(10_000)
        try:
            yield context
        finally:
            await context.close()


async def _snapshot(page: Page, name: str) -> None:
    if SCREENSHOT_DIR:
        await page.screenshot(path=str(Path(SCREENSHOT_DIR) / f"{name}.png"), full_page=True)


async def _open_job(page: Page, job_id: str) -> None:
    """Find a job with the list's search box, the way the owner would."""
    await page.goto(page.url.split("/admin/")[0] + "/admin/")
    await page.fill("#q", job_id)
    await page.press("#q", "Enter")
    await page.wait_for_url(f"**/admin/jobs/{job_id}")


async def test_owner_sets_up_finds_downloads_and_revives_in_a_browser(
    browser: BrowserContext, tmp_path: Path
) -> None:
    """The whole owner flow works in a real browser: cookies, CSRF fields, download, revive."""
    import httpx  # noqa: PLC0415 - beside the browser import, for symmetry of the fixture

    recording = tone(tmp_path / "tone.mp3", 2.0)
    data = recording.read_bytes()
    with running_service(tmp_path / "service") as service:
        async with httpx.AsyncClient(base_url=service.base_url, timeout=10.0) as api:
            uploaded = await upload(api, data, filename="interview.mp3")
        dead = await write_job(
            service, state=State.DEAD, source=recording, attempts=5, error="gave up after 5"
        )
        page = await browser.new_page()

        await page.goto(setup_link(service))
        await page.fill("#password", PASSWORD)
        await page.fill("#confirm", PASSWORD)
        await page.click("button[type=submit]")
        await page.wait_for_url("**/admin/")

        await page.click("text=Sign out")
        await page.wait_for_url(f"{service.base_url}/")
        await page.fill("#name", "owner")
        await page.fill("#password", PASSWORD)
        await page.click("button[type=submit]")
        await page.wait_for_url("**/admin/")
        await _snapshot(page, "jobs")
        assert await page.locator(f"a.id[title='{uploaded}']").count() == 1

        await _open_job(page, uploaded)
        await _snapshot(page, "job")
        async with page.expect_download() as waiting:
            await page.locator("a.download").first.click()
        download: Any = await waiting.value
        saved = Path(await download.path())
        assert saved.stat().st_size == len(data)
        assert saved.read_bytes() == data
        assert download.suggested_filename.endswith(".mp3")
        assert "interview" not in download.suggested_filename

        await _open_job(page, dead.id)
        assert (await page.text_content("#job-state")) == "dead"
        await page.click("#revive")
        # The page that follows has the same URL (wait_for_url would not wait): its flash is.
        revived = page.locator(".flash").filter(has_text="State changed from dead to convert.")
        await revived.wait_for()
        assert page.url.endswith(f"/admin/jobs/{dead.id}")
        for _ in range(DONE_WITHIN_MS // 250):
            if (await page.text_content("#job-state")) == "done":
                break
            await page.wait_for_timeout(250)
            await page.reload()
        await _snapshot(page, "revived")
        assert (await page.text_content("#job-state")) == "done"
        assert (await page.text_content("#job-error")) == "—"
