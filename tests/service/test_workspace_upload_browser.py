"""Uploading from the workspace in Chromium: two files dropped, bars, a list that updates itself.

Headless Debian Chromium driven by Playwright, as the other workspace
browser tests (their helpers: the owner, an invite, joining). Alice opens
her (empty) list in one tab and the upload page in another, drops two real
recordings on the drop zone: each gets a bar that reaches 100 %, both rows
turn ``done`` and the list tab shows both, done, with neither tab reloaded.
An empty file chosen through the file input is refused next to its bar with
the API's code. The keyboard reaches every control; the pages are shot at
1280 px and at 390 px. Bob sees none of it (list, JSON, the page by URL).
"""

from __future__ import annotations

import base64
import re
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.service.test_admin_browser import SCREENSHOT_DIR
from tests.service.test_workspace_browser import (
    DONE_WITHIN_MS,
    _context,
    _invite,
    _join,
    _owner,
    chromium,  # noqa: F401 - the fixture, shared
)
from tests.support.media import tone
from tests.support.service import running_service

if TYPE_CHECKING:
    from playwright.async_api import Browser, Page

pytestmark = pytest.mark.slow

#: A phone's width and height in CSS pixels.
PHONE = {"width": 390, "height": 844}
#: Marks a page's window; still there after the test's steps means the page never reloaded.
MARK = "window.uploadTestMark = 'still here'"


async def _snapshot(page: Page, name: str) -> None:
    if SCREENSHOT_DIR:
        await page.screenshot(path=str(Path(SCREENSHOT_DIR) / f"{name}.png"), full_page=True)


async def _drop(page: Page, files: dict[str, bytes]) -> None:
    """Drop ``files`` (name → bytes) on the drop zone as a person drags them from a folder."""
    payload = {name: base64.b64encode(data).decode() for name, data in files.items()}
    transfer = await page.evaluate_handle(
        """(files) => {
            const transfer = new DataTransfer();
            for (const [name, encoded] of Object.entries(files)) {
                const bytes = Uint8Array.from(atob(encoded), (c) => c.charCodeAt(0));
                transfer.items.add(new File([bytes], name, { type: "audio/mpeg" }));
            }
            return transfer;
        }""",
        payload,
    )
    zone = page.locator("[data-dropzone]")
    await zone.dispatch_event("dragenter", {"dataTransfer": transfer})
    await zone.dispatch_event("drop", {"dataTransfer": transfer})
    # Each row's title is its file's name until the person changes it; Send sends them.
    await page.locator("#send").click()


async def _tab_stops(page: Page, count: int) -> list[str]:
    """The ids (or tag names) focus visits on ``count`` presses of Tab from the page's top."""
    await page.evaluate("document.activeElement && document.activeElement.blur()")
    stops = []
    for _ in range(count):
        await page.keyboard.press("Tab")
        stops.append(
            await page.evaluate(
                "document.activeElement.id || document.activeElement.textContent.trim()"
            )
        )
    return stops


@pytest.mark.timeout(180)  # a service, four browser contexts, three recordings to done
async def test_two_dropped_files_progress_and_turn_done_without_a_reload(
    chromium: Browser,  # noqa: F811 - the shared fixture
    tmp_path: Path,
) -> None:
    """Drop two recordings: bars reach 100 %, both done in both tabs, unreloaded; bob sees none."""
    first = tone(tmp_path / "first.mp3", 2.0).read_bytes()
    second = tone(tmp_path / "second.mp3", 3.0).read_bytes()
    from playwright.async_api import expect  # noqa: PLC0415 - optional in dev

    with running_service(tmp_path / "service") as service:
        owner = await _owner(chromium, service)
        alice = await _join(chromium, await _invite(owner, "alice"))
        assert await alice.locator("table#recordings tbody tr").count() == 0
        await alice.evaluate(MARK)

        sender = await alice.context.new_page()
        answer = await sender.goto(service.base_url + "/w/upload")
        assert answer is not None
        assert answer.status == 200
        assert "script-src 'self'" in answer.headers["content-security-policy"]
        assert await sender.locator("script:not([src])").count() == 0

        # The keyboard reaches every control: the navigation and its search, the language
        # switch, the choices, the file input.
        stops = await _tab_stops(sender, 13)
        for control in (
            "Recordings",
            "Upload",
            "API tokens",
            "Telegram",
            "Sign out",
            "Русский",
            "language",
            "files",
        ):
            assert control in stops, stops
        if await sender.locator("#speakers").count():
            assert "speakers" in stops, stops
        # The file input is unseen: its label, the button people see, shows the focus.
        await sender.focus("#files")
        outline = await sender.evaluate(
            "getComputedStyle(document.querySelector('label[for=files]')).outlineStyle"
        )
        assert outline == "solid"
        await sender.evaluate(MARK)

        await _drop(sender, {"interview.mp3": first, "meeting.mp3": second})
        items = sender.locator("#uploads li")
        await expect(items).to_have_count(2)
        await expect(items.locator(".name")).to_have_text(["interview.mp3", "meeting.mp3"])
        titles = items.locator("input.title-input")
        await expect(titles.nth(0)).to_have_value("interview")
        await expect(titles.nth(1)).to_have_value("meeting")
        await expect(items.locator(".percent")).to_have_text(["100 %", "100 %"])
        await sender.wait_for_function(
            "Array.from(document.querySelectorAll('#uploads progress'))"
            ".every((bar) => bar.value === 100)"
        )
        await expect(items.locator("[data-field=state]")).to_have_text(
            ["done", "done"], timeout=DONE_WITHIN_MS
        )
        job_ids = [await item.get_attribute("data-job") for item in await items.all()]
        assert all(job_ids)
        assert len(set(job_ids)) == 2
        await expect(items.locator("a.open").first).to_be_visible()

        # An empty file chosen through the input is refused beside its bar, with the code.
        await sender.set_input_files(
            "#files", files=[{"name": "empty.mp3", "mimeType": "audio/mpeg", "buffer": b""}]
        )
        await sender.locator("#send").click()
        refused = items.nth(2)
        await expect(refused.locator("[data-field=state]")).to_have_text("refused")
        await expect(refused.locator(".upload-status")).to_contain_text("(empty_file)")
        await _snapshot(sender, "workspace-upload")

        # The list tab, never reloaded, shows both recordings, done.
        rows = alice.locator("table#recordings tbody tr")
        await expect(rows).to_have_count(2, timeout=DONE_WITHIN_MS)
        await expect(rows.locator("[data-field=state]")).to_have_text(
            ["done", "done"], timeout=DONE_WITHIN_MS
        )
        assert sorted([await r.get_attribute("data-job") for r in await rows.all()]) == sorted(
            job_ids
        )
        assert await alice.evaluate("window.uploadTestMark") == "still here"
        assert await sender.evaluate("window.uploadTestMark") == "still here"
        await expect(rows.locator("[data-field=length]")).not_to_have_text(["—", "—"])
        # Each is named by its file's name without the extension (SPEC §26).
        assert sorted(await rows.locator("a.rec-title").all_text_contents()) == [
            "interview",
            "meeting",
        ]
        await _snapshot(alice, "workspace-recordings-live")

        # Phone width: the same pages, laid out for 390 px.
        phone = await (await _context(chromium)).new_page()
        await phone.context.add_cookies(await alice.context.cookies())
        await phone.set_viewport_size(PHONE)
        await phone.goto(service.base_url + "/w/")
        await expect(phone.locator("table#recordings tbody tr")).to_have_count(2)
        width = await phone.evaluate("document.documentElement.scrollWidth")
        assert width <= PHONE["width"], width
        await _snapshot(phone, "workspace-recordings-live-390x844")
        await phone.goto(service.base_url + "/w/upload")
        await _drop(phone, {"voice-note.mp3": first})
        await expect(phone.locator("#uploads [data-field=state]")).to_have_text(
            "done", timeout=DONE_WITHIN_MS
        )
        width = await phone.evaluate("document.documentElement.scrollWidth")
        assert width <= PHONE["width"], width
        await _snapshot(phone, "workspace-upload-390x844")

        # A second person sees none of it.
        bob = await _join(chromium, await _invite(owner, "bob"))
        assert await bob.locator("table#recordings tbody tr").count() == 0
        polled = await bob.context.request.get(service.base_url + "/w/recordings.json")
        assert polled.status == 200
        assert (await polled.json())["jobs"] == []
        for job_id in job_ids:
            opened = await bob.goto(f"{service.base_url}/w/recordings/{job_id}")
            assert opened is not None
            assert opened.status == 404


@pytest.mark.timeout(180)  # four parts recognised one after another, 2 s each
async def test_a_long_recordings_parts_show_as_they_are_recognised(
    chromium: Browser,  # noqa: F811 - the shared fixture
    tmp_path: Path,
) -> None:
    """A recording split into parts: the list says how many parts are done, live, then done."""
    long = tone(tmp_path / "long.mp3", 12.0).read_bytes()
    from playwright.async_api import expect  # noqa: PLC0415 - optional in dev

    # Parts of 4 s that take 4 s each, one at a time: the list has time to show them move.
    # The list's page polls every 10 s while nothing on it moves, so the parts must last
    # longer than that for it to see the recording arrive before its end.
    config = {
        "memory": {"max_seconds": 4, "work_seconds": 4},
        "workers": {"convert": 1, "recognize": 1, "check": 1},
    }
    with running_service(tmp_path / "service", config=config) as service:
        owner = await _owner(chromium, service)
        alice = await _join(chromium, await _invite(owner, "alice"))
        await alice.evaluate(MARK)
        sender = await alice.context.new_page()
        await sender.goto(service.base_url + "/w/upload")
        await _drop(sender, {"long-interview.mp3": long})

        row = alice.locator("table#recordings tbody tr")
        await expect(row).to_have_count(1, timeout=DONE_WITHIN_MS)
        now = row.locator("[data-field=now]")
        # 12 s in parts of at most 4 s: four parts (the last a sliver), done one by one.
        await expect(now).to_have_text(
            re.compile(r"recognising · [123] of 4 parts"), timeout=DONE_WITHIN_MS
        )
        await _snapshot(alice, "workspace-recordings-working")
        await expect(row.locator("[data-field=state]")).to_have_text("done", timeout=DONE_WITHIN_MS)
        await expect(now).to_have_text("")
        await expect(sender.locator("#uploads [data-field=state]")).to_have_text("done")
        assert await alice.evaluate("window.uploadTestMark") == "still here"
