"""The recording page's Summary panel and Ask box in a real browser (SPEC §27).

Headless Debian Chromium driven by Playwright, as the workspace's other
browser tests, against a service whose ``[llm]`` is the fake chat server
(``tests/support/fake_chat.py``) on 127.0.0.1. A done recording offers
Generate; the summary is queued, built by the service's worker and shown
once done, without a reload; a question is answered with its quotes, and a
quote's link seeks the page's player to the quote's start; questions past
the owner's pace are told when to ask again; at 390 px wide nothing sticks
out sideways.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.service.test_admin_browser import SCREENSHOT_DIR
from tests.service.test_workspace_browser import _alice_with_a_done_recording
from tests.service.test_workspace_browser import chromium as chromium  # noqa: PLC0414 - fixture
from tests.support.fake_chat import API_KEY, MODEL, FakeChatServer
from tests.support.media import tone
from tests.support.service import running_service
from transcriber_core.budgets import burst_of
from transcriber_core.policy import ASK_CAPACITY

if TYPE_CHECKING:
    from playwright.async_api import Browser, Page

pytestmark = pytest.mark.slow

#: Three sentences: one transcript line.
HEARD = "We ship the release on Friday. Diane writes the notes. Then we celebrate."


async def _snapshot(page: Page, name: str) -> None:
    if SCREENSHOT_DIR:
        await page.screenshot(path=str(Path(SCREENSHOT_DIR) / f"{name}.png"), full_page=True)


async def test_generate_a_summary_and_ask_with_a_quote_that_seeks_the_player(
    chromium: Browser, tmp_path: Path
) -> None:
    """Generate shows the summary once built; an answer's quote link seeks the player there."""
    from playwright.async_api import expect  # noqa: PLC0415 - optional in dev

    recording = tone(tmp_path / "tone.mp3", 6.0).read_bytes()
    async with FakeChatServer() as fake:
        config = {
            "memory": {"text": HEARD},
            "llm": {"base_url": fake.base_url, "api_key": API_KEY, "model": MODEL},
        }
        with running_service(tmp_path / "service", config=config) as service:
            _, alice, job_id = await _alice_with_a_done_recording(chromium, service, recording)
            await alice.goto(f"{service.base_url}/w/recordings/{job_id}")

            panel = alice.get_by_role("region", name="Summary")
            await expect(panel.get_by_role("status").first).to_have_text("No summary yet.")
            await panel.get_by_role("button", name="Generate").click()
            # Built by the service's worker; the page shows it when it is done, no reload.
            await expect(alice.locator("#summary-text")).not_to_be_empty(timeout=30_000)
            assert await panel.get_by_role("button", name="Generate").is_hidden()
            assert await panel.get_by_role("list", name="Key points").locator("li").count() >= 1
            summarised = [r for r in fake.answered if not r.is_question]
            assert len(summarised) == 1
            assert "Friday" in summarised[0].text
            assert await alice.locator("#summary-stale").is_hidden()

            # A question: its answer, and a quote whose link seeks the player to its start.
            fake.answer_next(json.dumps({"answer": "Diane writes the notes.", "lines": [1]}))
            await panel.get_by_label("Ask about this recording").fill("Who writes the notes?")
            await panel.get_by_role("button", name="Ask").click()
            await expect(alice.locator("#ask-text")).to_have_text("Diane writes the notes.")
            quote = alice.get_by_role("list", name="Where the transcript says it").get_by_role(
                "link"
            )
            await expect(quote).to_have_count(1)
            start = float((await quote.get_attribute("href") or "").removeprefix("#t="))
            assert "notes" in (await alice.locator("#ask-quotes li").text_content() or "")
            # The player is elsewhere first, so the seek to the quote is seen.
            await alice.evaluate("document.getElementById('player').currentTime = 4")
            await alice.wait_for_function("document.getElementById('player').currentTime > 3")
            await quote.click()
            await alice.wait_for_function(
                "s => Math.abs(document.getElementById('player').currentTime - s) < 0.05", arg=start
            )
            await alice.evaluate("document.getElementById('player').pause()")

            # Questions are paced per owner (ADR 94): past the burst the box says when to ask.
            ask = panel.get_by_role("button", name="Ask")
            for _ in range(burst_of(ASK_CAPACITY) - 1):
                await ask.click()
                await expect(ask).to_be_enabled()
            await ask.click()
            await expect(alice.locator("#ask-status")).to_have_text(
                re.compile(r"^Too many questions at once: ask again in \d+ s\.$")
            )

            # At phone width the panel fits: nothing wider than the screen.
            await alice.set_viewport_size({"width": 390, "height": 844})
            await panel.scroll_into_view_if_needed()
            wide = await alice.evaluate("document.documentElement.scrollWidth")
            assert wide <= 390
            await alice.evaluate("window.scrollTo(0, 0)")  # the sticky player at its place
            await _snapshot(alice, "workspace-summary-390x844")

            # A correction makes it stale: the page says so and offers Regenerate.
            await alice.set_viewport_size({"width": 1280, "height": 900})
            await alice.get_by_role("button", name="Edit this turn").click()
            box = alice.get_by_role("textbox", name="Corrected text of this turn")
            await box.fill(HEARD.replace("Friday", "Monday"))
            await box.press("Control+Enter")
            await alice.get_by_role("status").filter(has_text="Saved.").wait_for()
            await alice.reload()
            await expect(alice.locator("#summary-stale")).to_be_visible()
            await expect(panel.get_by_role("button", name="Regenerate")).to_be_visible()
            await _snapshot(alice, "workspace-summary")
