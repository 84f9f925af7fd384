"""Recordings have names, their own actions, and a page that keeps working (SPEC §26, ADR 79).

One in-process service per test (``tests/app/conftest.py``): titles through
``/api/audio`` and ``PATCH /api/jobs/{id}``, shown in the list, the page,
search, the admin panel and download names; deleting from the page; and a
speaker renamed after one's own correction on the same page.
"""

from __future__ import annotations

import logging
import re

import httpx
import pytest

from tests.app.test_workspace import bearer, csrf, make_token
from tests.app.test_workspace import owner as owner  # noqa: PLC0414 - the fixture, shared
from tests.app.test_workspace_corrections import (
    alice as alice,  # noqa: PLC0414 - the fixture, shared
)
from tests.app.test_workspace_corrections import bob as bob  # noqa: PLC0414 - the fixture, shared
from tests.app.test_workspace_corrections import correct, done_job, someone
from transcriber_app.bootstrap import Runtime

#: A person's own title: Cyrillic, quotes, an emoji; never logged.
TITLE = "Планёрка «Q4» 😀"


async def test_a_title_sent_renamed_and_shown_everywhere_never_logged(
    runtime: Runtime,
    owner: httpx.AsyncClient,
    alice: httpx.AsyncClient,
    bob: httpx.AsyncClient,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """``/api/audio`` takes a title; status, list, page, admin show it; PATCH renames it."""
    caplog.set_level(logging.DEBUG)
    token = await make_token(alice)
    sent = await alice.post(
        "/api/audio",
        files={"file": ("secret-name.mp3", b"\xff\xfb" + b"\x00" * 4000, "audio/mpeg")},
        data={"title": f"  {TITLE}  "},
        headers=bearer(token),
    )
    assert sent.status_code == 202, sent.text
    job_id = sent.json()["job_id"]
    status = await alice.get(f"/api/status/{job_id}", headers=bearer(token))
    assert status.json()["title"] == TITLE
    assert TITLE in (await alice.get("/w/")).text
    page = await alice.get(f"/w/recordings/{job_id}")
    assert f'<h1 id="recording-title">{TITLE}</h1>' in page.text
    admin = await owner.get("/admin/")
    assert TITLE in admin.text
    assert "alice · HTTP" in admin.text

    renamed = await alice.patch(
        f"/api/jobs/{job_id}", json={"title": "Standup"}, headers=bearer(token)
    )
    assert renamed.status_code == 200, renamed.text
    assert renamed.json() == {"job_id": job_id, "title": "Standup"}
    assert "Standup" in (await alice.get("/w/")).text
    cleared = await alice.patch(f"/api/jobs/{job_id}", json={"title": None}, headers=bearer(token))
    assert cleared.json()["title"].startswith("Recording of ")

    refused = await alice.patch(
        f"/api/jobs/{job_id}", json={"title": "x" * 201}, headers=bearer(token)
    )
    assert (refused.status_code, refused.json()["error"]) == (400, "bad_title")
    for body in ({"title": 5}, {"name": "x"}, {"title": "a\nb"}):
        bad = await alice.patch(f"/api/jobs/{job_id}", json=body, headers=bearer(token))
        assert (bad.status_code, bad.json()["error"]) == (400, "bad_title"), body
        assert "a\nb" not in bad.text
    bobs = await bob.patch(
        f"/api/jobs/{job_id}", json={"title": "mine"}, headers=bearer(await make_token(bob))
    )
    assert (bobs.status_code, bobs.json()["error"]) == (404, "job_not_found")
    too_long = await alice.post(
        "/api/audio",
        files={"file": ("a.mp3", b"\xff\xfb" + b"\x00" * 4000, "audio/mpeg")},
        data={"title": "y" * 201},
        headers=bearer(token),
    )
    assert (too_long.status_code, too_long.json()["error"]) == (400, "bad_title")
    logged = "\n".join(f"{r.getMessage()} {r.__dict__}" for r in caplog.records)
    for private in (TITLE, "Standup", "secret-name", "y" * 201):
        assert private not in logged


async def test_the_page_renames_and_search_and_downloads_use_the_title(
    runtime: Runtime, alice: httpx.AsyncClient
) -> None:
    """The heading's form renames; a search hit and the download's name carry the title."""
    job = await done_job(runtime, await someone(runtime, "alice"))
    url = f"/w/recordings/{job.id}"
    page = await alice.get(url)
    assert f'<h1 id="recording-title">Recording of {job.created.day} ' in page.text
    saved = await alice.post(f"{url}/title", data={"csrf": csrf(page.text), "title": TITLE})
    assert (saved.status_code, saved.headers["location"]) == (303, url)
    assert TITLE in (await alice.get(url)).text
    hits = await alice.get("/w/search", params={"q": "good"})
    assert '<span class="hit-title"' in hits.text
    assert TITLE in hits.text
    download = await alice.get(f"{url}/transcript.srt")
    disposition = download.headers["content-disposition"]
    assert disposition.startswith(f"attachment; filename=\"{job.id}.srt\"; filename*=UTF-8''")
    assert disposition.endswith("%F0%9F%98%80.srt")
    refused = await alice.post(f"{url}/title", data={"csrf": csrf(page.text), "title": "a\x00"})
    assert refused.status_code == 303
    assert (await runtime.services.jobs.get(job.id)).title == TITLE


async def test_a_recording_is_deleted_from_its_page_after_a_confirmation(
    runtime: Runtime, alice: httpx.AsyncClient, bob: httpx.AsyncClient
) -> None:
    """The page links to a confirmation; its form deletes; another person gets 404."""
    job = await done_job(runtime, await someone(runtime, "alice"))
    url = f"/w/recordings/{job.id}"
    page = await alice.get(url)
    assert f'href="{url}/delete"' in page.text
    assert f'href="{url}/delete"' in (await alice.get("/w/")).text
    asked = await alice.get(f"{url}/delete")
    assert asked.status_code == 200
    assert "cannot be undone" in asked.text
    assert (await bob.get(f"{url}/delete")).status_code == 404
    bobs_token = csrf((await bob.get("/w/tokens")).text)
    assert (await bob.post(f"{url}/delete", data={"csrf": bobs_token})).status_code == 404
    forged = await alice.post(f"{url}/delete", data={})
    assert forged.status_code == 403
    gone = await alice.post(f"{url}/delete", data={"csrf": csrf(asked.text)})
    assert (gone.status_code, gone.headers["location"]) == (303, "/w/")
    assert (await alice.get(url)).status_code == 404


async def test_a_rename_after_ones_own_correction_is_accepted_and_anothers_is_a_conflict(
    runtime: Runtime, alice: httpx.AsyncClient
) -> None:
    """The correction's answer carries the page's new ``seen``; a stale one still gets 409."""
    job = await done_job(runtime, await someone(runtime, "alice"))
    url = f"/w/recordings/{job.id}"
    page = await alice.get(url)
    token = csrf(page.text)
    first = re.search(r'name="seen" value="([^"]+)"', page.text)
    assert first is not None
    corrected = await correct(
        alice, job.id, {"version": 0, "start": 0, "end": 2, "text": "Hello world."}
    )
    assert corrected.status_code == 200, corrected.text
    again = await correct(alice, job.id, {"version": 1, "start": 2, "end": 4, "text": "Goodbye."})
    assert again.status_code == 200, again.text
    seen = again.json()["seen"]
    renamed = await alice.post(f"{url}/speakers", data={"csrf": token, "seen": seen, "S1": "Ann"})
    assert renamed.status_code == 303, renamed.text
    # A tab opened before those changes has not seen them: its rename is refused.
    stale = await alice.post(f"{url}/speakers", data={"csrf": token, "seen": first[1], "S1": "Old"})
    assert stale.status_code == 409
    assert (await runtime.services.jobs.get(job.id)).speakers[0].name == "Ann"
