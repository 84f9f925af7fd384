"""Voices remembered in a real browser (SPEC §25): remember a speaker, see it named in the next one.

The real service runs the embedded demo with ``[memory] speakers = 2``: the
demo recognizer labels two voices taking turns by sentence, each with a
print of its own, so remembering and matching run without a model. Headless
Debian Chromium does what a person does: opens a recording, chooses
"Remember this voice" beside its second speaker, opens the next recording
and finds that speaker named, then renames and deletes the voice on the
Voices page.
"""

from __future__ import annotations

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
    chromium,
)
from tests.support.media import tone
from tests.support.service import Service, running_service

if TYPE_CHECKING:
    from playwright.async_api import Browser, Page

pytestmark = pytest.mark.slow

__all__ = ["chromium"]  # the headless browser fixture

#: What the demo says: three sentences, so the two voices take turns (S1, S2, S1).
TEXT = "Good morning and welcome. Thank you, glad to be here. Tell me about the harbour."


async def _snapshot(page: Page, name: str) -> None:
    if SCREENSHOT_DIR:
        await page.screenshot(path=str(Path(SCREENSHOT_DIR) / f"{name}.png"), full_page=True)


async def _transcribed(service: Service, token: str, recording: bytes) -> str:
    """Send ``recording`` with ``token`` asking for speakers; the job id once it is done."""
    headers = {"Authorization": f"Bearer {token}"}
    async with httpx.AsyncClient(base_url=service.base_url, timeout=30.0) as api:
        sent = await api.post(
            "/api/audio",
            files={"file": ("talk.wav", recording, "audio/wav")},
            data={"speakers": "auto"},
            headers=headers,
        )
    assert sent.status_code == 202, sent.text
    job_id: str = sent.json()["job_id"]
    state = service.wait_for_job(job_id, headers=headers, timeout=120.0)
    assert state["state"] == "done", state
    return job_id


async def test_a_remembered_voice_is_named_in_a_new_recording(
    chromium: Browser, tmp_path: Path
) -> None:
    """Remember this voice on one recording; the next one names that speaker; rename, delete."""
    recording = tone(tmp_path / "tone.wav", 3.0).read_bytes()
    config = {"memory": {"text": TEXT, "speakers": 2}}
    with running_service(tmp_path / "service", config=config) as service:
        owner = await _owner(chromium, service)
        alice = await _join(chromium, await _invite(owner, "alice"))
        token = await _make_token(alice, "alice's laptop")
        first = await _transcribed(service, token, recording)

        await alice.goto(f"{service.base_url}/w/recordings/{first}")
        assert await alice.locator("script:not([src])").count() == 0
        remember = alice.get_by_role("button", name="Remember the voice of S2")
        await remember.wait_for()
        await alice.locator("#voice-name-S2").fill("Diane")
        await remember.click()
        await alice.get_by_text("Voice remembered as Diane").wait_for()
        assert await alice.locator("#speaker-S2").input_value() == "Diane"

        second = await _transcribed(service, token, recording)
        await alice.goto(f"{service.base_url}/w/recordings/{second}")
        await alice.locator("#speaker-S2").wait_for()
        assert await alice.locator("#speaker-S2").input_value() == "Diane"
        assert await alice.locator("#speaker-S1").input_value() == "Speaker 1"
        assert await alice.locator("p.turn[data-speaker='S2'] span.speaker").first.inner_text() == (
            "Diane"
        )
        assert await alice.get_by_role("link", name="remembered voice").count() == 1
        await _snapshot(alice, "workspace-voice-named")

        # The Voices page lists it; a rename and a delete are one form each.
        await alice.get_by_role("navigation").get_by_role("link", name="Voices").click()
        await alice.wait_for_url("**/w/voices")
        table = alice.get_by_role("table", name="Your voices")
        await table.wait_for()
        assert await table.locator("tbody tr").count() == 1
        await _snapshot(alice, "workspace-voices")
        field = alice.get_by_label("Name of Diane")
        await field.fill("Diane Lee")
        await alice.get_by_role("button", name="Rename Diane").click()
        await alice.get_by_text("Voice renamed to Diane Lee.").wait_for()
        await alice.get_by_role("button", name="Delete Diane Lee").click()
        await alice.get_by_text("Voice deleted.").wait_for()
        assert await alice.get_by_text("No voices yet.").count() == 1
