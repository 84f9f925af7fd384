"""Correcting a transcript in a real browser (ADR 57): edit, save, reload, download, restore.

Headless Debian Chromium driven by Playwright, as the workspace's other
browser test. The demo recognizer reads a sentence with a misspelt word;
the person corrects it in place (Edit, type, Ctrl+Enter), the correction
survives a reload and is in the downloaded .txt, search finds the corrected
word (not the misspelt one) and leads to its moment while a second person
finds nothing and gets 404 for the page and its audio, Escape leaves a turn as it
was, a second page saving from the same version is told of the conflict,
and Restore brings the recognizer's words back.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.service.test_admin_browser import SCREENSHOT_DIR
from tests.service.test_workspace_browser import (
    _alice_with_a_done_recording,
    _context,
    _invite,
    _join,
)
from tests.service.test_workspace_browser import chromium as chromium  # noqa: PLC0414 - fixture
from tests.support.media import tone
from tests.support.service import running_service

if TYPE_CHECKING:
    from playwright.async_api import Browser, Page

pytestmark = pytest.mark.slow

#: What the demo recognizer hears: one word misspelt.
HEARD = "The quick brwn fox jumps over the lazy dog."
#: The person's correction of it.
FIXED = "The quick brown fox jumps over the lazy dog."


async def _snapshot(page: Page, name: str) -> None:
    if SCREENSHOT_DIR:
        await page.screenshot(path=str(Path(SCREENSHOT_DIR) / f"{name}.png"), full_page=True)


async def _shown(page: Page) -> list[str]:
    """The words the transcript shows, in order."""
    return [text.strip() for text in await page.locator("#transcript span.w").all_text_contents()]


async def test_correct_reload_download_and_restore_in_a_browser(
    chromium: Browser, tmp_path: Path
) -> None:
    """A corrected word stays after a reload, is in the .txt and search, and Restore undoes it."""
    from playwright.async_api import expect  # noqa: PLC0415 - optional in dev

    recording = tone(tmp_path / "tone.mp3", 3.0).read_bytes()
    config = {"memory": {"text": HEARD}}
    with running_service(tmp_path / "service", config=config) as service:
        owner, alice, job_id = await _alice_with_a_done_recording(chromium, service, recording)
        url = f"{service.base_url}/w/recordings/{job_id}"
        await alice.goto(url)
        assert await _shown(alice) == HEARD.split()
        assert await alice.get_attribute("#transcript", "data-version") == "0"
        # Without [llm] the page offers no summary (SPEC §27).
        assert await alice.locator("#summary").count() == 0

        # Escape leaves the turn as it was.
        await alice.get_by_role("button", name="Edit this turn").click()
        box = alice.get_by_role("textbox", name="Corrected text of this turn")
        await box.fill("nothing of the sort")
        await box.press("Escape")
        assert await box.count() == 0
        assert await _shown(alice) == HEARD.split()

        # Edit, type, Ctrl+Enter: saved in place, the word keeps its timing.
        before = alice.locator("#transcript span.w[data-i='2']")
        timing = (await before.get_attribute("data-start"), await before.get_attribute("data-end"))
        await alice.get_by_role("button", name="Edit this turn").click()
        await box.fill(FIXED)
        await _snapshot(alice, "workspace-editor")
        await box.press("Control+Enter")
        await alice.get_by_role("status").filter(has_text="Saved.").wait_for()
        assert await _shown(alice) == FIXED.split()
        after = alice.locator("#transcript span.w[data-i='2']")
        assert (await after.get_attribute("data-start"), await after.get_attribute("data-end")) == (
            timing
        )
        assert await alice.get_attribute("#transcript", "data-version") == "1"

        # A reload shows the correction; so does the downloaded text.
        await alice.reload()
        assert await _shown(alice) == FIXED.split()
        await _snapshot(alice, "workspace-transcript-corrected")
        async with alice.expect_download() as started:
            await alice.get_by_role("link", name="Text (.txt)").click()
        download = await started.value
        assert download.suggested_filename.startswith("Recording of ")
        assert download.suggested_filename.endswith(".txt")
        assert "brown" in Path(await download.path()).read_text(encoding="utf-8")

        # Search from the header finds the corrected word and leads to its moment.
        box_in_header = alice.get_by_role("searchbox", name="Search your transcripts")
        await box_in_header.fill("brown")
        await box_in_header.press("Enter")
        await alice.wait_for_url("**/w/search?q=brown")
        results = alice.get_by_role("list", name="Search results")
        assert await results.locator("mark").all_text_contents() == ["brown"]
        await _snapshot(alice, "workspace-search")
        await results.get_by_role("link").click()
        await alice.wait_for_url(f"**/w/recordings/{job_id}#t=*")
        moment = float(alice.url.rsplit("#t=", 1)[1])
        assert moment == float(timing[0] or "nan")
        await alice.goto(f"{service.base_url}/w/search?q=brwn")
        assert await alice.get_by_role("list", name="Search results").count() == 0

        # A second person finds nothing of it, and its page and audio are 404 to them.
        bob = await _join(chromium, await _invite(owner, "bob"))
        await bob.goto(f"{service.base_url}/w/search?q=brown")
        assert await bob.get_by_role("list", name="Search results").count() == 0
        assert "None of your transcripts" in (await bob.text_content("main") or "")
        for path in (f"/w/recordings/{job_id}", f"/w/recordings/{job_id}/media"):
            answer = await bob.context.request.get(service.base_url + path)
            assert answer.status == 404, path
        await bob.close()
        await alice.goto(url)

        # A second page still at version 1 saves after the first: told of the conflict.
        other = await (await _context(chromium)).new_page()
        await other.context.add_cookies(await alice.context.cookies())
        await other.goto(url)
        await alice.get_by_role("button", name="Edit this turn").click()
        await box.fill(FIXED.replace("lazy", "sleepy"))
        await box.press("Control+Enter")
        await alice.get_by_role("status").filter(has_text="Saved.").wait_for()
        await other.get_by_role("button", name="Edit this turn").click()
        late = other.get_by_role("textbox", name="Corrected text of this turn")
        await late.fill(FIXED.replace("lazy", "idle"))
        await late.press("Control+Enter")
        conflict = other.get_by_role("status").filter(has_text="Someone saved a change")
        await conflict.wait_for()
        await _snapshot(other, "workspace-editor-conflict")
        await alice.reload()
        assert "sleepy" in await _shown(alice)

        # Restore puts the recognizer's words back. The page that follows has the same URL
        # (wait_for_url would not wait), so its words are waited for, as the old page's differ.
        restore = alice.get_by_role("button", name="Restore the recognizer's transcript")
        await restore.click()
        await expect(alice.locator("#transcript span.w")).to_have_text(HEARD.split())
        assert alice.url == url
        await expect(restore).to_have_count(0)
        assert await alice.locator("script:not([src])").count() == 0
