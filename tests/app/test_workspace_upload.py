"""Uploading from the workspace and its live list, in-process (ADR 64)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.app.test_workspace import csrf, person
from tests.app.test_workspace import owner as owner  # noqa: PLC0414 - the fixture, shared
from tests.app.test_workspace import recording as recording  # noqa: PLC0414 - the fixture
from tests.support.admin import T0
from transcriber_adapters.localdisk.staging import STAGING_PREFIX
from transcriber_adapters.memory import ManualClock, MemoryFetcher
from transcriber_app.bootstrap import DEMO_LINK, Runtime, build
from transcriber_app.config import Config, HttpConfig, StorageConfig
from transcriber_app.web.workspace.live import POLL_BUSY_MS, POLL_IDLE_MS, now_of, percent_of
from transcriber_core.entities import Job, JobSummary, Origin, Progress, State

#: The upload cap of the runtime these tests build: a second of the tone is over it.
MAX_BYTES = 4_000


@pytest.fixture
async def runtime(tmp_path: Path, clock: ManualClock) -> AsyncIterator[Runtime]:
    """A built runtime: uploads capped at ``MAX_BYTES``, links the demo's; no workers run."""
    config = Config(
        storage=StorageConfig(data_dir=tmp_path / "data", max_record_bytes=MAX_BYTES),
        http=HttpConfig(host="127.0.0.1", port=8123),
    )
    built = await build(config, clock=clock, fetcher=MemoryFetcher(default=DEMO_LINK))
    yield built
    await built.close()


@pytest.fixture
async def alice(runtime: Runtime, owner: httpx.AsyncClient) -> AsyncIterator[httpx.AsyncClient]:
    """Alice, signed in."""
    client = await person(runtime, owner, "alice")
    yield client
    await client.aclose()


@pytest.fixture
async def bob(runtime: Runtime, owner: httpx.AsyncClient) -> AsyncIterator[httpx.AsyncClient]:
    """Bob, signed in: another person."""
    client = await person(runtime, owner, "bob")
    yield client
    await client.aclose()


@pytest.fixture
def small(recording: bytes) -> bytes:
    """A recording under the cap: the tone's first bytes (intake does not decode it)."""
    return recording[: MAX_BYTES // 2]


async def page_token(client: httpx.AsyncClient) -> str:
    """The CSRF token the upload page carries."""
    page = await client.get("/w/upload")
    assert page.status_code == 200, page.text
    return csrf(page.text)


async def upload(
    client: httpx.AsyncClient,
    data: bytes,
    *,
    token: str | None,
    fields: dict[str, str] | None = None,
) -> httpx.Response:
    """Post one file as the upload page's script does (the token in ``X-CSRF-Token``)."""
    headers = {} if token is None else {"X-CSRF-Token": token}
    return await client.post(
        "/w/upload",
        files={"file": ("interview.mp3", data, "audio/mpeg")},
        data=fields or {},
        headers=headers,
    )


def staged(runtime: Runtime) -> list[Path]:
    """Staging files left anywhere in the data dir."""
    data_dir = runtime.config.storage.data_dir
    return [path for path in data_dir.rglob(f"{STAGING_PREFIX}*") if path.is_file()]


async def listed(client: httpx.AsyncClient) -> dict[str, dict[str, Any]]:
    """The live list's rows by job id."""
    answer = await client.get("/w/recordings.json")
    assert answer.status_code == 200, answer.text
    assert answer.headers["content-type"].startswith("application/json")
    return {job["id"]: job for job in answer.json()["jobs"]}


async def test_a_file_sent_from_the_page_is_the_persons_and_nobody_elses(
    runtime: Runtime, alice: httpx.AsyncClient, bob: httpx.AsyncClient, small: bytes
) -> None:
    """202 with the job id; alice's list and page show it, bob's list and URL never do."""
    token = await page_token(alice)
    answer = await upload(alice, small, token=token, fields={"language": "auto"})
    assert answer.status_code == 202, answer.text
    job_id = answer.json()["job_id"]
    people = {p.name: p for p in await runtime.people.list_people()}
    stored = await runtime.services.jobs.get(job_id)
    assert stored.owner == people["alice"].owner_key

    rows = await listed(alice)
    assert list(rows) == [job_id]
    row = rows[job_id]
    assert row["state"] == "convert"
    assert row["queue_position"] == 0
    assert row["now"] == "waiting: next in line"
    assert row["url"] == f"/w/recordings/{job_id}"
    assert row["terminal"] is False
    assert f'data-job="{job_id}"' in (await alice.get("/w/")).text

    assert await listed(bob) == {}
    assert job_id not in (await bob.get("/w/")).text
    assert (await bob.get(f"/w/recordings/{job_id}")).status_code == 404
    assert staged(runtime) == []


async def test_without_the_csrf_header_or_a_session_nothing_is_taken(
    runtime: Runtime, alice: httpx.AsyncClient, small: bytes
) -> None:
    """No token, a wrong token, or no session: 403 with a stable code, and no job."""
    missing = await upload(alice, small, token=None)
    assert missing.status_code == 403
    assert missing.json()["error"] == "bad_csrf"
    assert missing.headers["connection"] == "close"
    wrong = await upload(alice, small, token="x" * 43)
    assert wrong.status_code == 403
    assert wrong.json()["error"] == "bad_csrf"
    async with httpx.AsyncClient(
        transport=alice._transport, base_url="http://127.0.0.1"
    ) as stranger:
        anonymous = await upload(stranger, small, token=await page_token(alice))
        assert anonymous.status_code == 403
        assert anonymous.json()["error"] == "not_signed_in"
        polled = await stranger.get("/w/recordings.json")
        assert polled.status_code == 403
        assert polled.json()["error"] == "not_signed_in"
    assert await listed(alice) == {}
    assert staged(runtime) == []


@pytest.mark.parametrize(
    ("fields", "code"),
    [
        ({"language": "klingon"}, "bad_language"),
        ({"speakers": "eleven"}, "bad_speakers"),
    ],
)
async def test_a_refused_choice_is_the_apis_400_and_leaves_no_file(
    runtime: Runtime,
    alice: httpx.AsyncClient,
    small: bytes,
    fields: dict[str, str],
    code: str,
) -> None:
    """A bad language or speakers value: 400 with the API's stable code; no job, no temp file."""
    answer = await upload(alice, small, token=await page_token(alice), fields=fields)
    assert answer.status_code == 400, answer.text
    assert answer.json()["error"] == code
    if code == "bad_language":
        assert "auto" in answer.json()["message"]
    assert await listed(alice) == {}
    assert staged(runtime) == []


async def test_too_large_and_empty_files_are_refused_as_the_api_refuses_them(
    runtime: Runtime, alice: httpx.AsyncClient, recording: bytes
) -> None:
    """Over ``[storage] max_record_bytes``: 413 ``too_large``; empty: 400; neither stays."""
    assert len(recording) > MAX_BYTES
    token = await page_token(alice)
    big = await upload(alice, recording, token=token)
    assert big.status_code == 413
    assert big.json()["error"] == "too_large"
    empty = await upload(alice, b"", token=token)
    assert empty.status_code == 400
    assert empty.json()["error"] == "empty_file"
    assert await listed(alice) == {}
    assert staged(runtime) == []


async def test_the_upload_page_offers_the_choices_the_api_accepts(
    runtime: Runtime, alice: httpx.AsyncClient
) -> None:
    """Every language the recognizer takes, auto first; scripts from files, never inline."""
    page = await alice.get("/w/upload")
    assert page.status_code == 200
    languages = sorted(runtime.services.recognizer.abilities.languages)
    assert '<option value="auto" selected>' in page.text
    for code in languages:
        assert f'<option value="{code}"' in page.text
    assert 'id="files" name="file" type="file" multiple' in page.text
    assert "/w/static/upload.js" in page.text
    assert "/w/static/live.js" in page.text
    assert "<script>" not in page.text
    policy = page.headers["content-security-policy"]
    assert "script-src 'self'" in policy
    assert "unsafe-inline" not in policy
    assert (await alice.get("/w/static/upload.js")).status_code == 200
    assert (await alice.get("/w/static/live.js")).status_code == 200


def _job(runtime: Runtime, owner: str, created_after: timedelta, **changes: Any) -> Job:
    fields: dict[str, Any] = {
        "id": runtime.services.ids.new_id(),
        "state": State.CONVERT,
        "origin": Origin.http(),
        "owner": owner,
        "created": T0 + created_after,
        "updated": T0 + created_after,
    }
    fields.update(changes)
    return Job(**fields)


async def test_the_live_list_reads_once_a_poll_and_says_what_happens_now(
    runtime: Runtime,
    clock: ManualClock,
    alice: httpx.AsyncClient,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Queue places, a failed job's error, one repository call a poll, and the poll's pace."""
    people = {p.name: p for p in await runtime.people.list_people()}
    key = people["alice"].owner_key
    first = _job(runtime, key, timedelta(seconds=1))
    second = _job(runtime, key, timedelta(seconds=2))
    failed = _job(runtime, key, timedelta(seconds=3), state=State.FAILED, error="no speech")
    for job in (first, second, failed):
        clock.set(job.created)
        await runtime.services.repo.create(job)

    listings = runtime.services.listings
    calls: list[str] = []

    def counting(name: str, method: Callable[..., Any]) -> Callable[..., Any]:
        async def counted(*args: Any, **kwargs: Any) -> Any:
            calls.append(name)
            return await method(*args, **kwargs)

        return counted

    for name in ("list_owned_summaries", "list_owned_jobs", "queue_position", "get_parts"):
        monkeypatch.setattr(listings, name, counting(name, getattr(listings, name)))
    answer = await alice.get("/w/recordings.json")
    assert calls == ["list_owned_summaries"]
    body = answer.json()
    assert [job["id"] for job in body["jobs"]] == [failed.id, second.id, first.id]
    rows = {job["id"]: job for job in body["jobs"]}
    assert rows[first.id]["now"] == "waiting: next in line"
    assert rows[second.id]["now"] == "waiting: 1 ahead"
    assert (rows[failed.id]["preview"], rows[failed.id]["failed"]) == ("no speech", True)
    assert rows[failed.id]["terminal"] is True
    assert body["poll_ms"] == POLL_BUSY_MS
    assert (body["page"], body["more"]) == (0, False)

    await runtime.services.repo.delete_job(first.id)
    await runtime.services.repo.delete_job(second.id)
    assert (await alice.get("/w/recordings.json")).json()["poll_ms"] == POLL_IDLE_MS


def test_now_says_parts_and_percent_of_a_running_job() -> None:
    """A long job in check: its parts done of all, not its place in check; a whole one: percent."""
    summary = JobSummary(
        id="j",
        state=State.CHECK,
        queue_position=0,
        created=T0,
        updated=T0,
        duration=200.0,
        progress=Progress(seconds_done=50.0, started=T0, updated=T0),
        parts_done=2,
        parts_total=8,
    )
    assert percent_of(summary) == 25
    assert now_of(summary, 25) == "recognising · 2 of 8 parts"
    whole = JobSummary(
        id="w",
        state=State.RECOGNIZE,
        created=T0,
        updated=T0,
        duration=200.0,
        progress=Progress(seconds_done=50.0, started=T0, updated=T0),
    )
    assert now_of(whole, percent_of(whole)) == "recognising · 25 %"
    converting = JobSummary(id="k", state=State.CONVERT, created=T0, updated=T0)
    assert now_of(converting, None) == "converting"
    done = JobSummary(id="d", state=State.DONE, created=T0, updated=T0, preview="hello")
    assert now_of(done, percent_of(done)) == ""


async def test_a_link_pasted_on_the_page_is_the_persons_job(
    runtime: Runtime, alice: httpx.AsyncClient
) -> None:
    """The page offers "Paste a link"; its form with url makes alice's job, listed in fetch."""
    page = await alice.get("/w/upload")
    assert 'id="link" name="url" type="url"' in page.text
    assert "Paste a link" in page.text
    answer = await alice.post(
        "/w/upload",
        files={"url": (None, "https://media.example.org/a-talk.mp3"), "language": (None, "auto")},
        headers={"X-CSRF-Token": csrf(page.text)},
    )
    assert answer.status_code == 202, answer.text
    job_id = answer.json()["job_id"]
    people = {p.name: p for p in await runtime.people.list_people()}
    stored = await runtime.services.jobs.get(job_id)
    assert (stored.owner, stored.state) == (people["alice"].owner_key, State.FETCH)
    row = (await listed(alice))[job_id]
    assert (row["state"], row["now"]) == ("fetch", "waiting: next in line")
    assert staged(runtime) == []


def test_now_says_the_bytes_and_percent_of_a_fetch() -> None:
    """A fetching link: the bytes so far, and the percent once the site declared a size."""
    progress = Progress(seconds_done=1.5 * 1024**2, total=6 * 1024**2, started=T0, updated=T0)
    known = JobSummary(id="f", state=State.FETCH, created=T0, updated=T0, progress=progress)
    assert percent_of(known) == 25
    assert now_of(known, 25) == "fetching the link · 1.5 MiB · 25 %"
    unknown = JobSummary(
        id="u",
        state=State.FETCH,
        created=T0,
        updated=T0,
        progress=Progress(seconds_done=2048.0, started=T0, updated=T0),
    )
    assert percent_of(unknown) is None
    assert now_of(unknown, None) == "fetching the link · 2 KiB"
