"""The transcript page in a real browser: seek by a word, the spoken word lit, renames, isolation.

The real service (memory recognizer, real ffmpeg, the offline diarizer)
transcribes an espeak-ng dialogue of two voices sent with a person's token
and ``speakers=2``; the demo recognizer times its words over the audio, so
the page has words with timings and two speakers. Headless Debian Chromium
plays the converted audio through ``/w/recordings/{id}/media``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import TYPE_CHECKING

import httpx
import pytest

from tests.service.test_admin_browser import SCREENSHOT_DIR
from tests.service.test_workspace_browser import (
    _invite,
    _join,
    _make_token,
    _owner,
    headless_chromium,
)
from tests.support.dialogue import conversation
from tests.support.service import running_service

if TYPE_CHECKING:
    from playwright.async_api import Browser, Page

pytestmark = pytest.mark.slow

#: What the demo recognizer says, timed over the dialogue: enough words for both voices.
TEXT = (
    "Good morning and welcome. Thank you, glad to be here. "
    "Tell me about the harbour. The boats leave at dawn and come back at noon."
)


@pytest.fixture
async def chromium() -> AsyncIterator[Browser]:
    """Headless Debian Chromium that may play audio without a click first; fails without it."""
    async with headless_chromium("--autoplay-policy=no-user-gesture-required") as browser:
        yield browser


async def _snapshot(page: Page, name: str) -> None:
    if SCREENSHOT_DIR:
        await page.screenshot(path=str(Path(SCREENSHOT_DIR) / f"{name}.png"), full_page=True)


async def _seek_target(page: Page, selector: str) -> tuple[float, float]:
    """Click the word at ``selector``; its data-start and the player's time as it seeks there."""
    await page.evaluate(
        """() => {
            const audio = document.getElementById("player");
            window.seekedTo = null;
            audio.addEventListener("seeking", () => { window.seekedTo = audio.currentTime; },
                                   { once: true });
        }"""
    )
    word = page.locator(selector)
    start = float(await word.get_attribute("data-start") or "nan")
    await word.click()
    await page.wait_for_function("() => window.seekedTo !== null")
    return start, float(await page.evaluate("window.seekedTo"))


async def test_the_transcript_page_plays_seeks_lights_and_renames_in_a_browser(
    chromium: Browser, tmp_path: Path
) -> None:
    """Click → seek to the word; play → one word lit; Space pauses; #t= seeks; renames; 404s."""
    talk = conversation(tmp_path / "talk.ogg", voices=2, turns=4).audio.read_bytes()
    config = {"memory": {"text": TEXT}}
    with running_service(tmp_path / "service", config=config) as service:
        owner = await _owner(chromium, service)
        alice = await _join(chromium, await _invite(owner, "alice"))
        token = await _make_token(alice, "alice's laptop")
        async with httpx.AsyncClient(base_url=service.base_url, timeout=30.0) as api:
            sent = await api.post(
                "/api/audio",
                files={"file": ("talk.ogg", talk, "audio/ogg")},
                data={"speakers": "2"},
                headers={"Authorization": f"Bearer {token}"},
            )
        assert sent.status_code == 202, sent.text
        job_id = sent.json()["job_id"]
        state = service.wait_for_job(
            job_id, headers={"Authorization": f"Bearer {token}"}, timeout=120.0
        )
        assert state["state"] == "done", state
        page_url = f"{service.base_url}/w/recordings/{job_id}"
        answer = await alice.goto(page_url)
        assert answer is not None
        assert answer.status == 200
        assert await alice.locator("script:not([src])").count() == 0
        article = alice.locator(f"article#transcript[data-job='{job_id}']")
        count = await article.locator("span.w").count()
        assert count == len(TEXT.split())
        assert await alice.locator("p.turn[data-speaker='S1'] span.speaker").count() >= 1
        assert await alice.locator("p.turn[data-speaker='S2'] span.speaker").count() >= 1
        await alice.wait_for_function("() => document.getElementById('player').readyState >= 1")

        # A click seeks the player to the word's start and plays from there.
        start, seeked = await _seek_target(alice, "span.w[data-i='5']")
        assert abs(seeked - start) <= 0.01
        await alice.wait_for_function(
            "() => document.querySelectorAll('span.w[aria-current=\"true\"]').length === 1"
        )
        lit = await alice.evaluate(
            "Number(document.querySelector('span.w[aria-current=\"true\"]').dataset.i)"
        )
        assert lit >= 5
        await alice.wait_for_function(
            "() => document.getElementById('player').currentTime > " + repr(start + 0.3)
        )
        assert await alice.locator("span.w[aria-current='true']").count() == 1

        # Space pauses and plays again when the focus is not in a field.
        await alice.locator("h1").click()
        await alice.keyboard.press("Space")
        await alice.wait_for_function("() => document.getElementById('player').paused")
        await _snapshot(alice, "workspace-transcript")
        await alice.keyboard.press("Space")
        await alice.wait_for_function("() => !document.getElementById('player').paused")
        await alice.keyboard.press("Space")

        # The transcript is one tab stop; the arrows move between words; Enter plays from one.
        await alice.evaluate("document.getElementById('player').pause()")
        stop = article.locator("span.w[tabindex='0']")
        assert await stop.count() == 1
        # Focused first, then read: a timeupdate the pause queued may still move the tab stop
        # while the focus is outside the transcript (player.js), never once it is inside.
        await stop.focus()
        origin = int(await alice.evaluate("document.activeElement.dataset.i"))
        assert 0 <= origin < count - 2
        await alice.keyboard.press("ArrowRight")
        await alice.keyboard.press("ArrowRight")
        await alice.keyboard.press("ArrowLeft")
        assert await alice.evaluate("document.activeElement.dataset.i") == str(origin + 1)
        assert await article.locator("span.w[tabindex='0']").count() == 1
        second_start = float(
            await alice.locator(f"span.w[data-i='{origin + 1}']").get_attribute("data-start")
            or "nan"
        )
        await alice.keyboard.press("Enter")
        await alice.wait_for_function(
            "() => document.getElementById('player').currentTime >= " + repr(second_start - 0.01)
        )
        await alice.evaluate("document.getElementById('player').pause()")

        # A search result's link, #t=SECONDS, seeks there on load.
        await alice.goto(page_url + "#t=2.5")
        await alice.wait_for_function(
            "() => Math.abs(document.getElementById('player').currentTime - 2.5) < 0.01"
        )

        # A correction in place, then a rename on the same page, unreloaded: no conflict,
        # the page got its new version with the correction's answer (SPEC §26).
        await alice.get_by_role("button", name="Edit this turn").first.click()
        box = alice.get_by_role("textbox", name="Corrected text of this turn")
        await box.fill((await box.input_value()) + " indeed")
        await box.press("Control+Enter")
        await alice.get_by_role("status").filter(has_text="Saved.").wait_for()

        # Renaming a speaker shows the new name, escaped, in every S1 turn.
        await alice.locator("#speaker-S1").fill("Diane <the host>")
        await alice.get_by_role("button", name="Rename S1").click()
        await alice.wait_for_url(f"**/w/recordings/{job_id}#speakers")
        assert "Speaker renamed." in (await alice.locator("p.flash").text_content() or "")
        names = await alice.locator("p.turn[data-speaker='S1'] span.speaker").all_text_contents()
        assert names
        assert set(names) == {"Diane <the host>"}
        await alice.goto(page_url)

        phone = await (
            await chromium.new_context(
                viewport={"width": 390, "height": 844},
                storage_state=await alice.context.storage_state(),
            )
        ).new_page()
        await phone.goto(page_url)
        await phone.wait_for_function("() => document.getElementById('player').readyState >= 1")
        await _snapshot(phone, "workspace-transcript-390x844")
        width = await phone.evaluate("document.documentElement.scrollWidth")
        assert width <= 390

        # A second person gets 404 for the page and for the audio.
        bob = await _join(chromium, await _invite(owner, "bob"))
        opened = await bob.goto(page_url)
        assert opened is not None
        assert opened.status == 404
        media = await bob.context.request.get(page_url + "/media", headers={"Range": "bytes=0-9"})
        assert media.status == 404
        mine = await alice.context.request.get(page_url + "/media", headers={"Range": "bytes=0-9"})
        assert mine.status == 206
        assert len(await mine.body()) == 10

        # The heading's title is renamed in place; Delete asks first, then the list lacks it.
        await alice.goto(page_url)
        await alice.locator("#title").fill("Talk «with Diane»")
        await alice.get_by_role("button", name="Rename", exact=True).click()
        await alice.locator("h1#recording-title").filter(has_text="Talk «with Diane»").wait_for()
        await alice.locator("#delete-recording").click()
        await alice.wait_for_url(f"**/w/recordings/{job_id}/delete")
        assert "Talk «with Diane»" in (await alice.locator("h1").text_content() or "")
        await alice.locator("#confirm-delete").click()
        await alice.wait_for_url(f"{service.base_url}/w/")
        assert await alice.locator(f"a.id[title='{job_id}']").count() == 0
        gone = await alice.context.request.get(page_url)
        assert gone.status == 404
