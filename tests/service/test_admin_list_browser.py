"""The jobs list a person can read, in a real browser at 1280x900 and at phone width (390x844).

Headless Chromium from Debian through Playwright, as ``test_admin_browser.py``.
``TRANSCRIBER_TEST_SCREENSHOT_DIR`` keeps screenshots (docs/admin.md shows them).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.service.test_admin_browser import SCREENSHOT_DIR, browser
from tests.support.admin import PASSWORD, setup_link, write_job
from tests.support.media import tone
from tests.support.service import Service, running_service
from transcriber_core.entities import Origin, OriginKind, State

if TYPE_CHECKING:
    from playwright.async_api import BrowserContext, Page

pytestmark = pytest.mark.slow

__all__ = ["browser"]  # the fixture, shared with the panel's other browser test

#: An error long enough to wrap, with a long word that must break only where it must.
LONG_ERROR = (
    "the recognizer refused the recording: the audio stream could not be decoded after "
    "conversion; resend it as a common format (Ogg, MP3, WAV, M4A)"
)
#: Jobs on the page, more than fit a screen.
JOBS = 24


async def _jobs(service: Service, recording: Path) -> list[str]:
    """``JOBS`` jobs of every kind, newest last: states, origins, durations, texts, errors."""
    first = datetime.now(UTC) - timedelta(hours=2)
    ids = []
    states = [State.DONE, State.FAILED, State.RECOGNIZE, State.DEAD, State.CONVERT, State.DONE]
    for n in range(JOBS):
        state = states[n % len(states)]
        telegram = n % 3 == 0
        job = await write_job(
            service,
            state=state,
            source=recording if n == JOBS - 1 else None,
            created=first + timedelta(minutes=n),
            origin=Origin(kind=OriginKind.TELEGRAM, chat_id=100 + n, message_id=n)
            if telegram
            else Origin.http(),
            duration=8.6 + n * 37.0 if state is not State.CONVERT else None,
            text=f"Meeting notes {n}: we agreed to ship the release on Friday and to "
            "write the migration guide first, then tell every customer."
            if state is State.DONE
            else None,
            error=LONG_ERROR if state in (State.FAILED, State.DEAD) else None,
        )
        ids.append(job.id)
    return ids


async def _log_in(page: Page, service: Service) -> None:
    await page.goto(setup_link(service))
    await page.fill("#password", PASSWORD)
    await page.fill("#confirm", PASSWORD)
    await page.click("button[type=submit]")
    await page.wait_for_url("**/admin/")


async def _rows_in_view(page: Page) -> int:
    """Table rows wholly inside the viewport, the page scrolled to its top."""
    counted: int = await page.evaluate(
        """() => [...document.querySelectorAll('table.jobs tbody tr')].filter(row => {
             const box = row.getBoundingClientRect();
             return box.top >= 0 && box.bottom <= window.innerHeight;
           }).length"""
    )
    return counted


async def _scrolls_sideways(page: Page) -> bool:
    """True when the page is wider than the viewport (a horizontal scroll bar)."""
    wider: bool = await page.evaluate(
        "() => document.documentElement.scrollWidth > document.documentElement.clientWidth"
    )
    return wider


async def _snapshot(page: Page, name: str) -> None:
    if SCREENSHOT_DIR:
        await page.screenshot(path=str(Path(SCREENSHOT_DIR) / f"{name}.png"))


@pytest.fixture
async def listed(
    browser: BrowserContext, tmp_path: Path
) -> AsyncIterator[tuple[Page, Service, list[str]]]:
    """A logged-in page on a service with ``JOBS`` jobs of every kind."""
    recording = tone(tmp_path / "tone.mp3", 1.0)
    with running_service(tmp_path / "service") as service:
        ids = await _jobs(service, recording)
        page = await browser.new_page()
        await _log_in(page, service)
        yield page, service, ids


async def test_at_1280x900_fifteen_jobs_or_more_show_with_titles_and_badges(
    listed: tuple[Page, Service, list[str]],
) -> None:
    """A desktop screen shows >= 15 rows: titles (the id on hover), duration, kind, preview."""
    page, _, ids = listed
    await page.set_viewport_size({"width": 1280, "height": 900})
    await page.reload()
    await _snapshot(page, "jobs-1280x900")
    assert await _rows_in_view(page) >= 15
    assert not await _scrolls_sideways(page)
    newest = page.locator("table.jobs tbody tr").first
    link = newest.locator("a.id")
    assert await link.get_attribute("title") == ids[-1]
    # Named by its title, here the dated default (ADR 79); the id is the link's title.
    shown = (await link.text_content() or "").strip()
    assert shown.startswith("Recording of "), shown
    assert await newest.locator(".badge").text_content() == "done"
    assert (await newest.locator("td.duration").text_content() or "").strip() == "14:20"
    assert (await newest.locator("td.kind").text_content() or "").strip() == "HTTP"
    preview = (await newest.locator("td.preview").text_content() or "").strip()
    assert preview.startswith(f"Meeting notes {JOBS - 1}: we agreed")
    # An error wraps at word boundaries: no line of it ends in the middle of a word.
    error = page.locator("td.error").first
    assert await error.evaluate("cell => getComputedStyle(cell).overflowWrap") == "break-word"
    assert await error.evaluate("cell => getComputedStyle(cell).wordBreak") == "normal"


async def test_at_phone_width_the_page_never_scrolls_sideways(
    listed: tuple[Page, Service, list[str]],
) -> None:
    """At 390x844 the list fits the width; each job still opens from its id."""
    page, _, ids = listed
    await page.set_viewport_size({"width": 390, "height": 844})
    await page.reload()
    await _snapshot(page, "jobs-390x844")
    assert not await _scrolls_sideways(page)
    assert await _rows_in_view(page) >= 4
    await page.locator(f"a.id[title='{ids[-2]}']").click()
    await page.wait_for_url(f"**/admin/jobs/{ids[-2]}")
    await _snapshot(page, "job-390x844")
    wide = await page.evaluate(
        """() => [...document.querySelectorAll('body *')]
             .filter(e => e.getBoundingClientRect().right > document.documentElement.clientWidth)
             .map(e => e.tagName + '.' + e.className).slice(0, 8)"""
    )
    assert not await _scrolls_sideways(page), wide


async def test_delete_asks_first_and_says_what_it_removes(
    listed: tuple[Page, Service, list[str]],
) -> None:
    """Delete on the job page leads to a question naming what goes; only its button deletes."""
    page, service, ids = listed
    newest = ids[-1]
    await page.goto(f"{service.base_url}/admin/jobs/{newest}")
    await page.click("#delete")
    await page.wait_for_url(f"**/admin/jobs/{newest}/delete")
    await _snapshot(page, "delete-confirm")
    question = await page.text_content("main") or ""
    assert "the transcript" in question
    assert "1 file" in question
    await page.goto(f"{service.base_url}/admin/jobs/{newest}")
    assert await page.text_content("#job-state") == "done"  # asking deleted nothing
    await page.click("#delete")
    await page.click("#confirm-delete")
    await page.wait_for_url("**/admin/")
    assert await page.locator(f"a.id[title='{newest}']").count() == 0
