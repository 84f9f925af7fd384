"""Every page on a phone and a laptop, recording in the browser, and the app installed (SPEC §26).

One service and one headless Chromium for the module; the browser's fake
microphone plays an espeak-ng WAV. Every page of both sides, signed out, as
a person and as the owner, is opened at 1280x900 and at 390x844: no page
scrolls sideways, no word stands one letter a line, the manifest and the
favicon are linked and nothing the page loads is a 404. With
``TRANSCRIBER_TEST_SCREENSHOT_DIR`` set, each page is shot there
(``scripts/screenshots`` sets it to ``docs/images``). A recording made with
the Record button becomes a job of the length recorded; a share posted from
the site makes a job, one posted from another site is refused.
"""

from __future__ import annotations

import itertools
import json
import re
import struct
import subprocess
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs
import httpx
import pytest
import pytest_asyncio

from tests.service.test_admin_browser import SCREENSHOT_DIR
from tests.service.test_workspace_browser import (
    DONE_WITHIN_MS,
    _invite,
    _join,
    _make_token,
    _owner,
    headless_chromium,
)
from tests.support.admin import setup_link, write_job
from tests.support.media import generate
from tests.support.service import Service, running_service
from tests.support.speech import espeak
from transcriber_core.entities import Origin, OriginKind, State

if TYPE_CHECKING:
    from playwright.async_api import Browser, Page, Response

pytestmark = [pytest.mark.slow, pytest.mark.asyncio(loop_scope="module")]

#: The two screens every page must fit.
SCREENS = ({"width": 1280, "height": 900}, {"width": 390, "height": 844})
#: What the memory recognizer says for every recording.
TEXT = (
    "Good morning and welcome. Thank you, glad to be here. Tell me about the harbour. "
    "The boats leave at dawn and come back at noon."
)
#: What the fake microphone says, over and over.
SAID = "The boats leave at dawn and come back at noon. Tell me about the harbour."
#: An error long enough to wrap, with a long word in it.
LONG_ERROR = (
    "the recognizer refused the recording: the audio stream could not be decoded after "
    "conversion; resend it as a common format (Ogg, MP3, WAV, M4A) or supercalifragilistic"
)
#: Seconds the browser records before Stop.
RECORD_SECONDS = 4

#: The recorder's clock at ``RECORD_SECONDS`` or later (``m:ss``).
AT_LEAST_RECORDED = re.compile(rf"^(0:0[{RECORD_SECONDS}-9]|0:[1-5]\d|[1-9]\d*:\d\d(:\d\d)?)$")
#: The seconds the recorder's ``m:ss`` clock shows, in the page.
SECONDS_SHOWN = (
    "document.getElementById('record-time').textContent.split(':')"
    ".reduce((sum, part) => sum * 60 + Number(part), 0)"
)
#: Finds what the page must not do: scroll sideways, stand a word one letter a line.
LAYOUT_PROBLEMS = """() => {
  const problems = [];
  const root = document.documentElement;
  if (root.scrollWidth > window.innerWidth) {
    const wide = [...document.querySelectorAll('body *')]
      .filter(e => e.getBoundingClientRect().right > window.innerWidth + 0.5)
      .map(e => e.tagName.toLowerCase() + (e.className ? '.' + e.className : '')).slice(0, 6);
    problems.push('scrolls sideways: ' + root.scrollWidth + ' > ' + window.innerWidth
                  + ' (' + wide.join(', ') + ')');
  }
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  while (walker.nextNode()) {
    const node = walker.currentNode;
    const text = node.textContent.trim();
    const box = node.parentElement.getBoundingClientRect();
    if (text.length < 6 || box.width <= 1 || !node.parentElement.offsetParent) continue;
    const range = document.createRange();
    range.selectNodeContents(node);
    const lines = new Set([...range.getClientRects()].filter(r => r.width > 0)
                          .map(r => Math.round(r.top)));
    if (lines.size >= 3 && text.length / lines.size < 4) {
      problems.push('one letter a line: "' + text.slice(0, 24) + '" in ' + lines.size + ' lines');
    }
  }
  return problems;
}"""


def _wav(target: Path) -> Path:
    """``SAID`` in espeak-ng's voice, as 48 kHz 16-bit mono WAV (the fake microphone's input)."""
    spoken = target.with_name("said-22k.wav")
    subprocess.run(
        [espeak(), "-v", "en-us", "-s", "150", "-w", str(spoken), SAID],
        check=True,
        capture_output=True,
        timeout=30,
    )
    return generate(target, "-i", str(spoken), "-ac", "1", "-ar", "48000", "-c:a", "pcm_s16le")


@pytest.fixture(scope="module")
def microphone(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The WAV the browser's fake microphone plays."""
    return _wav(tmp_path_factory.mktemp("microphone") / "said.wav")


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Service]:
    """The service for the module: the memory recognizer says ``TEXT``."""
    with running_service(
        tmp_path_factory.mktemp("service"), config={"memory": {"text": TEXT}}
    ) as running:
        yield running


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def chromium(microphone: Path) -> AsyncIterator[Browser]:
    """One headless Chromium for the module, its microphone the WAV, allowed without asking."""
    async with headless_chromium(
        "--use-fake-ui-for-media-stream",
        "--use-fake-device-for-media-stream",
        f"--use-file-for-fake-audio-capture={microphone}",
        "--autoplay-policy=no-user-gesture-required",
    ) as browser:
        yield browser


@attrs.frozen(kw_only=True)
class People:
    """What the tests share: the owner's and alice's pages, her token and recording, done."""

    owner: Page
    alice: Page
    token: str
    job_id: str
    #: An unused invite link (for bob), to see the set-password page.
    invite: str
    #: What was wrong with the owner's setup page (seen before it was used).
    setup: list[str]


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def people(chromium: Browser, service: Service, microphone: Path) -> People:
    """The owner set up, alice joined with a done recording; jobs of every kind in the panel."""
    setup = []
    for screen in SCREENS:
        context = await chromium.new_context(viewport=screen)
        setup += await _check(
            await context.new_page(), setup_link(service), "screens-admin-setup", screen
        )
        await context.close()
    owner = await _owner(chromium, service)
    alice = await _join(chromium, await _invite(owner, "alice"))
    token = await _make_token(alice, "alice's phone")
    async with httpx.AsyncClient(base_url=service.base_url, timeout=30.0) as api:
        sent = await api.post(
            "/api/audio",
            files={"file": ("harbour.wav", microphone.read_bytes(), "audio/wav")},
            headers={"Authorization": f"Bearer {token}"},
        )
    assert sent.status_code == 202, sent.text
    job_id = sent.json()["job_id"]
    state = service.wait_for_job(job_id, headers={"Authorization": f"Bearer {token}"})
    assert state["state"] == "done", state
    for n, kind in enumerate((State.FAILED, State.DONE, State.DEAD)):
        await write_job(
            service,
            state=kind,
            origin=Origin(kind=OriginKind.TELEGRAM, chat_id=100 + n, message_id=n),
            duration=61.0 + n,
            text=TEXT if kind is State.DONE else None,
            error=LONG_ERROR if kind is not State.DONE else None,
        )
    invite = await _invite(owner, "bob-with-a-long-name")
    return People(owner=owner, alice=alice, token=token, job_id=job_id, invite=invite, setup=setup)


async def _shoot(page: Page, name: str) -> None:
    """Keep a screenshot of the page when asked to (``TRANSCRIBER_TEST_SCREENSHOT_DIR``)."""
    if SCREENSHOT_DIR:
        await page.screenshot(path=str(Path(SCREENSHOT_DIR) / f"{name}.png"), full_page=True)


async def _check(
    page: Page, url: str, name: str, screen: dict[str, int], language: str = "en"
) -> list[str]:
    """Open ``url`` on ``screen`` in ``language``; what is wrong with it (empty when it fits)."""
    missing: list[str] = []

    def note(answer: Response) -> None:
        if answer.status == 404:
            missing.append(answer.url)

    page.on("response", note)
    answer = await page.goto(url)
    assert answer is not None
    problems = [f"HTTP {answer.status}"] if answer.status >= 400 else []
    problems += await page.evaluate(LAYOUT_PROBLEMS)
    problems += [f"404: {each}" for each in missing]
    links = await page.evaluate(
        "[...document.querySelectorAll('link[rel=manifest], link[rel=icon]')].map(l => l.rel)"
    )
    if sorted(set(links)) != ["icon", "manifest"]:
        problems.append(f"links: {links}")
    lang = await page.evaluate("document.documentElement.lang")
    if lang != language:
        problems.append(f"<html lang={lang!r}>, not {language!r}")
    suffix = "" if language == "en" else f"-{language}"
    await _shoot(page, f"{name}-{screen['width']}x{screen['height']}{suffix}")
    page.remove_listener("response", note)
    return [f"{name} at {screen['width']}: {problem}" for problem in problems]


async def test_every_page_fits_a_laptop_and_a_phone(
    chromium: Browser, service: Service, people: People
) -> None:
    """Each page of both sides, at 1280x900 and 390x844, in English and Russian: no sideways
    scroll, no broken words."""
    base = service.base_url
    job = people.job_id
    pages: list[tuple[str, str, str]] = [
        ("anyone", f"{base}/", "screens-door"),
        ("anyone", f"{base}/w/login", "screens-workspace-login"),
        ("anyone", people.invite, "screens-workspace-invite"),
        ("anyone", f"{base}/admin/login", "screens-admin-login"),
        ("alice", f"{base}/w/", "screens-workspace-recordings"),
        ("alice", f"{base}/w/upload", "screens-workspace-upload"),
        ("alice", f"{base}/w/recordings/{job}", "screens-workspace-recording"),
        ("alice", f"{base}/w/search?q=harbour", "screens-workspace-search"),
        ("alice", f"{base}/w/voices", "screens-workspace-voices"),
        ("alice", f"{base}/w/tokens", "screens-workspace-tokens"),
        ("alice", f"{base}/w/telegram", "screens-workspace-telegram"),
        ("owner", f"{base}/admin/", "screens-admin-jobs"),
        ("owner", f"{base}/admin/jobs/{job}", "screens-admin-job"),
        ("owner", f"{base}/admin/jobs/{job}/delete", "screens-admin-delete"),
        ("owner", f"{base}/admin/people", "screens-admin-people"),
        ("owner", f"{base}/admin/account", "screens-admin-account"),
    ]
    problems = list(people.setup)
    # Russian words are longer: each page is seen in both languages the pages speak,
    # chosen by Accept-Language (neither alice nor the owner has picked one here).
    for language, screen in itertools.product(("en", "ru"), SCREENS):
        anyone = await chromium.new_context(viewport=screen)
        tabs = {
            "anyone": await anyone.new_page(),
            "alice": await people.alice.context.new_page(),
            "owner": await people.owner.context.new_page(),
        }
        for tab in tabs.values():
            await tab.set_viewport_size(screen)
            await tab.set_extra_http_headers({"Accept-Language": language})
        for who, url, name in pages:
            problems += await _check(tabs[who], url, name, screen, language)
        search = tabs["alice"].locator(".nav-search input")
        await tabs["alice"].goto(f"{base}/w/")
        width = await search.evaluate("input => input.getBoundingClientRect().width")
        if width < 160:
            problems.append(f"the header search is {width} px wide at {screen['width']}")
        for tab in tabs.values():
            await tab.close()
        await anyone.close()
    assert not problems, "\n".join(problems)


async def test_a_recording_made_in_the_browser_becomes_a_job_of_its_length(
    chromium: Browser, people: People, service: Service
) -> None:
    """Record → the time runs and the meter moves → Stop sends it: a job about that long."""
    from playwright.async_api import expect  # noqa: PLC0415 - optional in dev

    page = await people.alice.context.new_page()
    await page.set_viewport_size(SCREENS[1])
    await page.goto(f"{service.base_url}/w/upload")
    record = page.locator("#record")
    await expect(record).to_be_visible()
    await record.click()
    await expect(record).to_have_attribute("aria-pressed", "true")
    # Waits through expect, not wait_for_function: its polling evaluates a string, which the
    # page's CSP (no 'unsafe-eval') refuses whenever the first look is not already true.
    await expect(page.locator("#record-level")).not_to_have_js_property("value", 0)
    await expect(page.locator("#record-time")).to_have_text(AT_LEAST_RECORDED)
    await _shoot(page, "screens-workspace-recording-now-390x844")
    await record.click()
    shown = await page.evaluate(f"() => {SECONDS_SHOWN}")
    assert shown >= RECORD_SECONDS
    item = page.locator("#uploads li")
    await expect(item).to_have_count(1)
    assert (await item.locator(".name").text_content() or "").endswith(".webm")
    await expect(item.locator("[data-field=state]")).to_have_text("done", timeout=DONE_WITHIN_MS)
    job_id = await item.get_attribute("data-job")
    async with httpx.AsyncClient(base_url=service.base_url, timeout=10.0) as api:
        status = await api.get(
            f"/api/status/{job_id}", headers={"Authorization": f"Bearer {people.token}"}
        )
    assert status.status_code == 200
    # The clock shows whole seconds, stopped as Stop was pressed: the recording is that long.
    seconds = status.json()["duration"]
    assert shown - 0.5 <= seconds <= shown + 1.5, (seconds, shown)
    await page.close()


async def test_without_media_recorder_there_is_no_record_button(
    people: People, service: Service
) -> None:
    """A browser without MediaRecorder keeps the Record button hidden; files still go."""
    page = await people.alice.context.new_page()
    await page.add_init_script("delete window.MediaRecorder")
    await page.goto(f"{service.base_url}/w/upload")
    await page.wait_for_load_state("load")
    assert not await page.locator("#record").is_visible()
    assert await page.locator("label[for=files]").is_visible()
    await page.close()


def _png_size(data: bytes) -> tuple[int, int]:
    """A PNG's width and height, from its IHDR chunk."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", data[16:24])
    return width, height


async def test_the_manifest_names_the_app_and_its_icons_are_served(service: Service) -> None:
    """The manifest has its fields and a share target; each icon is there at its size."""
    async with httpx.AsyncClient(base_url=service.base_url, timeout=10.0) as api:
        answer = await api.get("/manifest.webmanifest")
        assert answer.status_code == 200
        assert answer.headers["content-type"].startswith("application/manifest+json")
        manifest: dict[str, Any] = json.loads(answer.text)
        for field in ("name", "short_name", "icons", "start_url", "theme_color"):
            assert manifest[field], field
        assert manifest["display"] == "standalone"
        share = manifest["share_target"]
        assert share["method"] == "POST"
        assert share["enctype"] == "multipart/form-data"
        assert share["params"]["files"][0]["accept"] == ["audio/*", "video/*"]
        assert (await api.get(manifest["start_url"])).status_code in (200, 303)
        sizes = set()
        for icon in manifest["icons"]:
            served = await api.get(icon["src"])
            assert served.status_code == 200, icon
            assert served.headers["content-type"].startswith(icon["type"])
            if icon["type"] == "image/png":
                width, height = _png_size(served.content)
                assert icon["sizes"] == f"{width}x{height}"
                sizes.add(width)
        assert {192, 512} <= sizes
        favicon = await api.get("/favicon.ico")
        assert favicon.status_code == 200
        assert favicon.content[:4] == b"\x00\x00\x01\x00"


async def test_a_share_from_the_site_makes_a_job_and_one_from_elsewhere_is_refused(
    people: People, service: Service, microphone: Path
) -> None:
    """Same-origin and browser-made shares make jobs; cross-site and signed-out ones don't."""
    page = await people.alice.context.new_page()
    await page.goto(f"{service.base_url}/w/")
    landed = await page.evaluate(
        """async () => {
            const data = new FormData();
            const bytes = new Uint8Array(await (await fetch('/icons/icon-192.png')).arrayBuffer());
            data.append('file', new File([bytes], 'shared.png', {type: 'audio/ogg'}));
            const answer = await fetch('/w/share', {method: 'POST', body: data});
            return [answer.status, new URL(answer.url).pathname];
        }"""
    )
    # Not audio: the intake takes it and the job fails in convert, as an upload's would.
    assert landed[0] == 200
    assert landed[1].startswith("/w/recordings/"), landed
    shared = landed[1].rsplit("/", 1)[-1]

    # The browser's own navigation (a share from the OS): Sec-Fetch-Site: none.
    cookies = {c["name"]: c["value"] for c in await people.alice.context.cookies()}
    wav = ("talk.wav", microphone.read_bytes(), "audio/wav")
    signed_in = httpx.AsyncClient(base_url=service.base_url, timeout=30.0, cookies=cookies)
    async with signed_in as api, httpx.AsyncClient(base_url=service.base_url) as anyone:
        made = await api.post("/w/share", files={"file": wav}, headers={"Sec-Fetch-Site": "none"})
        assert made.status_code == 303, made.text
        mine = made.headers["location"].rsplit("/", 1)[-1]
        auth = {"Authorization": f"Bearer {people.token}"}
        assert (await api.get(f"/api/status/{mine}", headers=auth)).status_code == 200
        assert (await api.get(f"/api/status/{shared}", headers=auth)).status_code == 200

        # Signed out: nothing is made; the page says to sign in and share again.
        out = await anyone.post("/w/share", files={"file": wav}, headers={"Sec-Fetch-Site": "none"})
        assert out.status_code == 403
        assert "/w/login" in out.text
        assert "share the recording again" in out.text
        before = {job["id"] for job in (await api.get("/w/recordings.json")).json()["jobs"]}

    # A form on another site posting to the share target, in the browser: refused.
    elsewhere = "http://elsewhere.test/"

    async def other_site(route: Any) -> None:
        await route.fulfill(
            content_type="text/html",
            body=f"""<form method="post" enctype="multipart/form-data"
                     action="{service.base_url}/w/share">
                     <input type="file" name="file"><button>Send</button></form>""",
        )

    await page.route(elsewhere, other_site)
    await page.goto(elsewhere)
    await page.set_input_files("input[type=file]", str(microphone))
    async with page.expect_navigation() as navigation:
        await page.click("button")
    refused = await navigation.value
    assert refused is not None
    assert refused.status == 403
    async with httpx.AsyncClient(base_url=service.base_url, cookies=cookies) as api:
        after = {job["id"] for job in (await api.get("/w/recordings.json")).json()["jobs"]}
    assert after == before
    await page.close()
