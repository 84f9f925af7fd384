"""The admin panel through the real service process on 127.0.0.1 (acceptance 13 and 14).

Most tests share one service whose owner is created once; tests that watch
startup (the setup link) start their own. Jobs the API cannot make (dead,
or a hundred at once) are written into the service's own SQLite file on a
second connection while it runs.
"""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest

from tests.support.admin import (
    OWNER_NAME,
    PASSWORD,
    admin_client,
    create_owner,
    csrf_of,
    direct_access,
    job_ids_of,
    log_in,
    log_in_waiting,
    owner_client,
    post_form,
    service_with_owner,
    setup_link,
    setup_links,
    upload,
    write_job,
    write_jobs,
)
from tests.support.media import tone
from tests.support.service import Service, running_service
from transcriber_app.web.admin.jobs import PAGE_SIZE
from transcriber_core.entities import State

pytestmark = pytest.mark.slow

#: How long a revived job may take to reach done with ffmpeg and the memory recognizer.
DONE_WITHIN = 30.0


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Service]:
    """One running service whose owner exists, for the tests that need no fresh start."""
    with service_with_owner(tmp_path_factory.mktemp("admin")) as running:
        yield running


@pytest.fixture
async def owner(service: Service) -> AsyncIterator[httpx.AsyncClient]:
    """A client logged in as the owner."""
    async with owner_client(service) as client:
        yield client


@pytest.fixture
async def anonymous(service: Service) -> AsyncIterator[httpx.AsyncClient]:
    """A client with no session at all."""
    async with admin_client(service) as client:
        yield client


@pytest.fixture(scope="module")
def recording(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real two-second MP3 that ffmpeg converts."""
    return tone(tmp_path_factory.mktemp("media") / "tone.mp3", 2.0)


async def wait_for_state(client: httpx.AsyncClient, job_id: str, state: State) -> dict[str, str]:
    """Poll the status API until the job is in ``state``; its status body."""
    deadline = asyncio.get_running_loop().time() + DONE_WITHIN
    while True:
        body = (await client.get(f"/api/status/{job_id}")).json()
        if body["state"] == state.value:
            return dict(body)
        assert asyncio.get_running_loop().time() < deadline, f"stuck in {body}"
        await asyncio.sleep(0.1)


# -- acceptance 13 ---------------------------------------------------------------------------------


async def test_uploaded_job_is_listed_and_its_file_downloads_whole(
    owner: httpx.AsyncClient, recording: Path
) -> None:
    """Acceptance 13: a job uploaded over HTTP shows in the panel; its file downloads exactly."""
    data = recording.read_bytes()
    job_id = await upload(owner, data, filename="секретное-слово.mp3")

    listing = await owner.get("/admin/")
    assert listing.status_code == 200
    assert job_id in job_ids_of(listing.text)

    found = await owner.get("/admin/", params={"q": job_id})
    assert found.status_code == 303
    assert found.headers["location"] == f"/admin/jobs/{job_id}"
    detail = await owner.get(found.headers["location"])
    assert detail.status_code == 200
    links = re.findall(r'href="(/admin/files/[^"]+)"', detail.text)
    assert links, "the job page offers no download"

    download = await owner.get(links[0])
    assert download.status_code == 200
    assert len(download.content) == len(data)
    assert download.content == data
    assert download.headers["content-type"] == "application/octet-stream"
    disposition = download.headers["content-disposition"]
    file_id = links[0].rsplit("/", 1)[1]
    assert disposition == f'attachment; filename="{file_id}.mp3"'
    assert "секретное" not in detail.text


async def test_downloads_leave_no_file_id_in_the_service_log(
    service: Service, owner: httpx.AsyncClient, recording: Path
) -> None:
    """Acceptance 12, downloads: the real process logs the download, never the stored name."""
    job_id = await upload(owner, recording.read_bytes())
    detail = await owner.get(f"/admin/jobs/{job_id}")
    [link, *_] = re.findall(r'href="(/admin/files/[^"]+)"', detail.text)
    file_id = link.rsplit("/", 1)[1]
    assert (await owner.get(link)).status_code == 200
    logs = service.logs()
    assert f"event=admin.download size={recording.stat().st_size}" in logs
    assert file_id not in logs


# -- acceptance 14 ---------------------------------------------------------------------------------


async def test_anonymous_requests_are_refused_without_content(
    service: Service, anonymous: httpx.AsyncClient, recording: Path
) -> None:
    """Acceptance 14: every admin page, download and action refuses a caller without a session."""
    marker = "an error only the owner may read"
    job = await write_job(service, state=State.DEAD, source=recording, error=marker, attempts=5)
    assert job.source_file_id is not None
    data = recording.read_bytes()
    pages = [
        "/admin/",
        "/admin/?state=dead",
        f"/admin/?q={job.id}",
        "/admin/?page=2",
        f"/admin/jobs/{job.id}",
        "/admin/jobs/no-such-job",
    ]
    for path in pages:
        answer = await anonymous.get(path)
        assert answer.status_code == 303, path
        assert answer.headers["location"].startswith("/admin/login?next="), path
        assert marker not in answer.text
        assert job.source_file_id not in answer.text
    for path in (f"/admin/files/{job.source_file_id}", "/admin/files/no-such-file"):
        answer = await anonymous.get(path)
        assert answer.status_code == 403, path
        assert data[:64] not in answer.content
        assert "content-disposition" not in answer.headers
    revive = await anonymous.post(
        f"/admin/jobs/{job.id}/state", data={"state": "convert", "from_state": "dead"}
    )
    assert revive.status_code == 403
    async with direct_access(service) as (repo, _):
        assert (await repo.get(job.id)).state is State.DEAD


async def test_forged_or_foreign_cookies_are_refused(
    service: Service, recording: Path, tmp_path: Path
) -> None:
    """A session cookie not signed with this database's key opens nothing."""
    job = await write_job(service, state=State.DEAD, source=recording, error="x")
    with running_service(tmp_path / "other") as other:
        async with admin_client(other) as stranger:
            await create_owner(stranger, setup_link(other))
            cookie = stranger.cookies.get("transcriber_session")
    assert cookie
    async with admin_client(service) as client:
        client.cookies.set("transcriber_session", cookie, domain="127.0.0.1", path="/")
        for path in ("/admin/", f"/admin/jobs/{job.id}"):
            assert (await client.get(path)).status_code == 303
        answer = await client.get(f"/admin/files/{job.source_file_id}")
        assert answer.status_code == 403


# -- setup link and sessions ---------------------------------------------------------


async def test_setup_link_is_printed_once_and_never_once_the_owner_exists(tmp_path: Path) -> None:
    """While no owner exists a start logs one link; after setup, restarts log none and refuse it."""
    with running_service(tmp_path / "first") as first:
        link = setup_link(first)
        assert "http://127.0.0.1:" in link
        async with admin_client(first) as client:
            await create_owner(client, link)
            session = client.cookies.get("transcriber_session")
            assert (await client.get(link)).status_code == 403
        assert setup_links(first) == [link]
        first.stop()
    with running_service(tmp_path / "second", data_dir=first.data_dir) as second:
        assert setup_links(second) == []
        async with admin_client(second) as client:
            refused = await client.get(link.replace(str(first.port), str(second.port)))
            assert refused.status_code == 403
            assert 'name="password"' not in refused.text
            # The session key lives in the database: the login survived the restart.
            client.cookies.set("transcriber_session", session or "", domain="127.0.0.1")
            assert (await client.get("/admin/")).status_code == 200


async def test_the_root_is_the_sign_in_form_which_says_where_the_setup_link_is(
    tmp_path: Path,
) -> None:
    """``GET /`` is the sign-in form; before setup it points at the log's link; after, home."""
    with running_service(tmp_path) as service:
        async with admin_client(service) as client:
            for path in ("/", "/admin/login", "/w/login"):
                login = await client.get(path)
                assert login.status_code == 200
                assert 'name="name"' in login.text
                assert "No owner account exists yet" in login.text
                assert "event=admin.setup_link" in login.text
            await create_owner(client, setup_link(service))
            home = await client.get("/")
            assert home.status_code == 303
            assert home.headers["location"] == "/admin/"
        async with admin_client(service) as later:
            login = await later.get("/")
            assert "No owner account exists yet" not in login.text


def reset_password(service: Service) -> subprocess.CompletedProcess[str]:
    """``transcriber owner reset-password`` on the running service's config."""
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "transcriber_app",
            "owner",
            "-c",
            str(service.config_path),
            "reset-password",
        ],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
        env={k: v for k, v in os.environ.items() if not k.startswith("TRANSCRIBER_")},
    )


@pytest.mark.timeout(180)  # three runs of the command, each a Python start and a slow hash
async def test_reset_password_prints_a_one_time_link_that_sets_a_new_one(tmp_path: Path) -> None:
    """The command voids the password and sessions; its link sets a new one, once, and only it."""
    with running_service(tmp_path) as service:
        assert reset_password(service).returncode == 2  # no owner yet: the setup link is the way
        async with admin_client(service) as old:
            await create_owner(old, setup_link(service))
            done = reset_password(service)
            assert done.returncode == 0, done.stderr
            [link] = [line for line in done.stdout.splitlines() if "/admin/reset?token=" in line]
            token = httpx.URL(link).params["token"]
            # Every session ended, the old password is void, and the secret is no password.
            assert (await old.get("/admin/")).status_code == 303
        async with admin_client(service) as anyone:
            assert (await log_in(anyone)).status_code == 403  # the first failure: no back-off yet
            assert link.startswith(f"{service.base_url}/admin/reset?token=")
            page = await anyone.get(link)
            assert page.status_code == 200
            new = "a brand new password"
            answer = await anyone.post(
                "/admin/reset",
                data={"csrf": csrf_of(page.text), "token": token, "password": new, "confirm": new},
            )
            assert answer.status_code == 303
            assert (await anyone.get("/admin/")).status_code == 200
            again = await anyone.get(f"/admin/reset?token={token}")
            assert again.status_code == 403  # used: the hash is the new password's now
        async with admin_client(service) as later:
            assert (await log_in(later, new)).status_code == 303  # and the failures are cleared
        # The link's secret is no password, even while it is what the hash stands for.
        second = reset_password(service)
        [link] = [line for line in second.stdout.splitlines() if "/admin/reset?token=" in line]
        async with admin_client(service) as guesser:
            secret = "\x00reset\x00" + httpx.URL(link).params["token"]
            assert (await log_in(guesser, secret)).status_code == 403


async def test_a_restart_without_owner_makes_a_new_link(tmp_path: Path) -> None:
    """An unused link dies with its process; the next start prints a different one."""
    with running_service(tmp_path / "first") as first:
        old = setup_link(first)
        first.stop()
    with running_service(tmp_path / "second", data_dir=first.data_dir) as second:
        new = setup_link(second)
        assert httpx.URL(new).params["token"] != httpx.URL(old).params["token"]
        async with admin_client(second) as client:
            stale = await client.get(f"/admin/setup?token={httpx.URL(old).params['token']}")
            assert stale.status_code == 403
            assert (await client.get(new)).status_code == 200


async def test_wrong_setup_token_is_refused_and_creates_nobody(tmp_path: Path) -> None:
    """A guessed token neither shows the form nor creates the owner; the real one still works."""
    with running_service(tmp_path) as service:
        link = setup_link(service)
        async with admin_client(service) as client:
            page = await client.get("/admin/setup", params={"token": "guess"})
            assert page.status_code == 403
            assert 'name="password"' not in page.text
            form = await client.get(link)
            posted = await client.post(
                "/admin/setup",
                data={
                    "csrf": csrf_of(form.text),
                    "token": "guess",
                    "name": OWNER_NAME,
                    "password": PASSWORD,
                    "confirm": PASSWORD,
                },
            )
            assert posted.status_code == 403
            assert (await client.get("/admin/")).status_code == 303
            await create_owner(client, link)
            assert (await client.get("/admin/")).status_code == 200


async def test_short_or_mismatched_password_is_refused_at_setup(tmp_path: Path) -> None:
    """The setup form keeps its rules: 12 characters at least, typed the same twice."""
    with running_service(tmp_path) as service:
        link = setup_link(service)
        token = httpx.URL(link).params["token"]
        async with admin_client(service) as client:
            for password, confirm in (("short", "short"), (PASSWORD, PASSWORD + "x")):
                form = await client.get(link)
                answer = await client.post(
                    "/admin/setup",
                    data={
                        "csrf": csrf_of(form.text),
                        "token": token,
                        "name": OWNER_NAME,
                        "password": password,
                        "confirm": confirm,
                    },
                )
                assert answer.status_code == 400
                assert 'name="password"' in answer.text
            assert (await client.get("/admin/")).status_code == 303


async def test_wrong_password_is_refused(anonymous: httpx.AsyncClient) -> None:
    """A wrong password gets no session; the right one does after the back-off; logout ends it."""
    answer = await log_in(anonymous, "not the password at all")
    assert answer.status_code == 403
    assert (await anonymous.get("/admin/")).status_code == 303
    assert (await log_in_waiting(anonymous)).status_code == 303
    assert (await anonymous.get("/admin/")).status_code == 200
    out = await post_form(anonymous, "/admin/", "/admin/logout")
    assert out.status_code == 303
    assert (await anonymous.get("/admin/")).status_code == 303


async def test_login_returns_to_the_page_asked_for(
    service: Service, anonymous: httpx.AsyncClient
) -> None:
    """A login that started from a job's page goes back there, and never to another site."""
    job = await write_job(service, state=State.DONE, text="hello")
    first = await anonymous.get(f"/admin/jobs/{job.id}")
    login_page = await anonymous.get(first.headers["location"])
    assert f'value="/admin/jobs/{job.id}"' in login_page.text
    answer = await anonymous.post(
        "/admin/login",
        data={
            "csrf": csrf_of(login_page.text),
            "name": OWNER_NAME,
            "password": PASSWORD,
            "next": f"/admin/jobs/{job.id}",
        },
    )
    assert answer.headers["location"] == f"/admin/jobs/{job.id}"
    await post_form(anonymous, "/admin/", "/admin/logout")
    page = await anonymous.get("/admin/login")
    evil = await anonymous.post(
        "/admin/login",
        data={
            "csrf": csrf_of(page.text),
            "name": OWNER_NAME,
            "password": PASSWORD,
            "next": "//evil.example/",
        },
    )
    assert evil.headers["location"] == "/admin/"


# -- CSRF --------------------------------------------------------------------------------


async def test_posts_without_the_right_csrf_token_are_refused(
    service: Service, owner: httpx.AsyncClient, recording: Path
) -> None:
    """A state change, login or logout without the session's CSRF token changes nothing (403)."""
    job = await write_job(service, state=State.DEAD, source=recording, error="x", attempts=5)
    action = f"/admin/jobs/{job.id}/state"
    fields = {"state": "convert", "from_state": "dead"}
    async with admin_client(service) as other:
        await log_in(other)
        foreign = csrf_of((await other.get("/admin/")).text)
    for token in (None, "", "wrong-token", foreign):
        data = fields if token is None else {**fields, "csrf": token}
        answer = await owner.post(action, data=data)
        assert answer.status_code == 403, token
    async with direct_access(service) as (repo, _):
        assert (await repo.get(job.id)).state is State.DEAD
    assert (await owner.post("/admin/logout", data={"csrf": "wrong"})).status_code == 403
    assert (await owner.get("/admin/")).status_code == 200
    async with admin_client(service) as fresh:
        no_token = await fresh.post("/admin/login", data={"name": OWNER_NAME, "password": PASSWORD})
        assert no_token.status_code == 403
        assert (await fresh.get("/admin/")).status_code == 303


# -- state changes -------------------------------------------------------------------------


async def test_revived_dead_job_runs_to_done(
    service: Service, owner: httpx.AsyncClient, recording: Path
) -> None:
    """Reviving a dead job clears its attempts and error and the workers take it at once."""
    job = await write_job(
        service, state=State.DEAD, source=recording, attempts=5, error="gave up after 5 attempts"
    )
    page = await owner.get(f"/admin/jobs/{job.id}")
    assert 'id="revive"' in page.text
    answer = await owner.post(
        f"/admin/jobs/{job.id}/state",
        data={"csrf": csrf_of(page.text), "state": "convert", "from_state": "dead"},
    )
    assert answer.status_code == 303
    assert answer.headers["location"] == f"/admin/jobs/{job.id}"
    after = await owner.get(answer.headers["location"])
    assert "State changed from dead to convert." in after.text
    body = await wait_for_state(owner, job.id, State.DONE)
    assert body["text"]
    async with direct_access(service) as (repo, _):
        done = await repo.get(job.id)
    assert done.attempts == 0
    assert done.error is None
    assert done.acquisition_id is None


async def test_owner_state_change_clears_lease_delay_and_attempts(
    service: Service, owner: httpx.AsyncClient
) -> None:
    """An owner's edit goes through the transition that clears lease, delay and attempts."""
    later = datetime.now(UTC) + timedelta(hours=1)
    job = await write_job(
        service,
        state=State.FAILED,
        attempts=3,
        acquisition_id="someone-else",
        acquire_time=datetime.now(UTC),
        delay_time=later,
        error="could not decode",
    )
    answer = await post_form(
        owner,
        f"/admin/jobs/{job.id}",
        f"/admin/jobs/{job.id}/state",
        state="dead",
        from_state="failed",
    )
    assert answer.status_code == 303
    async with direct_access(service) as (repo, _):
        changed = await repo.get(job.id)
    assert changed.state is State.DEAD
    assert (changed.attempts, changed.acquisition_id, changed.acquire_time) == (0, None, None)
    assert changed.delay_time is None


async def test_state_change_on_a_stale_page_does_nothing(
    service: Service, owner: httpx.AsyncClient
) -> None:
    """A form made when the job was dead does not act once it has moved on."""
    job = await write_job(service, state=State.DONE, text="already fine")
    answer = await post_form(
        owner,
        f"/admin/jobs/{job.id}",
        f"/admin/jobs/{job.id}/state",
        state="convert",
        from_state="dead",
    )
    assert answer.status_code == 303
    page = await owner.get(answer.headers["location"])
    assert "nothing was changed" in page.text
    async with direct_access(service) as (repo, _):
        assert (await repo.get(job.id)).state is State.DONE


async def test_unknown_state_is_refused(service: Service, owner: httpx.AsyncClient) -> None:
    """Only the closed set of states is accepted from the form."""
    job = await write_job(service, state=State.DEAD, error="x")
    answer = await post_form(
        owner,
        f"/admin/jobs/{job.id}",
        f"/admin/jobs/{job.id}/state",
        state="finished",
        from_state="dead",
    )
    assert answer.status_code == 400
    async with direct_access(service) as (repo, _):
        assert (await repo.get(job.id)).state is State.DEAD


# -- escaping --------------------------------------------------------------------------------


async def test_html_in_job_fields_is_shown_as_text(
    service: Service, owner: httpx.AsyncClient
) -> None:
    """A job error or transcript holding HTML renders escaped on the list and the detail page."""
    script = "<script>alert(1)</script>"
    job = await write_job(
        service,
        state=State.DEAD,
        error=f"{script} & more",
        text='<img src=x onerror="alert(2)">',
        created=datetime.now(UTC) + timedelta(days=1),  # first on the list
    )
    detail = await owner.get(f"/admin/jobs/{job.id}")
    listing = await owner.get("/admin/")
    for page in (detail, listing):
        assert script not in page.text
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page.text
    assert "<img" not in detail.text
    assert "&lt;img src=x onerror=&#34;alert(2)&#34;&gt;" in detail.text
    assert "&amp; more" in detail.text


# -- the list ---------------------------------------------------------------------------------


async def test_pages_list_every_job_newest_first(
    service: Service, owner: httpx.AsyncClient
) -> None:
    """Pages of 50 follow one another newest first, with no job twice and none skipped."""
    await write_jobs(service, PAGE_SIZE * 2 + 7)
    async with direct_access(service) as (repo, _):
        expected = [job.id for job in await repo.list_jobs(limit=10_000)]
    seen: list[str] = []
    url: str | None = "/admin/"
    while url is not None:
        page = await owner.get(url)
        assert page.status_code == 200
        ids = job_ids_of(page.text)
        assert len(ids) <= PAGE_SIZE
        seen.extend(ids)
        older = re.search(r'href="([^"]+)" rel="next"', page.text)
        url = older[1].replace("&amp;", "&") if older else None
    assert seen == expected
    last_page = (len(expected) + PAGE_SIZE - 1) // PAGE_SIZE
    beyond = await owner.get("/admin/", params={"page": last_page + 1})
    assert job_ids_of(beyond.text) == []


async def test_state_filter_lists_only_that_state(
    service: Service, owner: httpx.AsyncClient
) -> None:
    """``?state=failed`` lists exactly the failed jobs, newest first, and pages them the same."""
    failed = await write_jobs(service, 3, state=State.FAILED)
    async with direct_access(service) as (repo, _):
        expected = [job.id for job in await repo.list_jobs(state=State.FAILED, limit=PAGE_SIZE)]
    page = await owner.get("/admin/", params={"state": "failed"})
    assert page.status_code == 200
    assert job_ids_of(page.text) == expected
    assert {job.id for job in failed} <= set(expected)
    done_page = await owner.get("/admin/", params={"state": "done"})
    assert not {job.id for job in failed} & set(job_ids_of(done_page.text))
    assert (await owner.get("/admin/", params={"state": "bogus"})).status_code == 400


async def test_find_by_id_opens_the_job_or_says_none(
    service: Service, owner: httpx.AsyncClient
) -> None:
    """An exact id goes to the job's page; an unknown one says so with a 404."""
    job = await write_job(service, state=State.DONE, text="found me")
    found = await owner.get("/admin/", params={"q": f"  {job.id} "})
    assert found.status_code == 303
    assert found.headers["location"] == f"/admin/jobs/{job.id}"
    missing = await owner.get("/admin/", params={"q": "no-such-job"})
    assert missing.status_code == 404
    assert "No job has this id." in missing.text


async def test_job_page_shows_every_field(service: Service, owner: httpx.AsyncClient) -> None:
    """The detail page shows state, attempts, lease, delay, operation, text and word count."""
    now = datetime.now(UTC)
    job = await write_job(
        service,
        state=State.CHECK,
        attempts=2,
        acquisition_id="lease-holder-id",
        acquire_time=now,
        delay_time=now + timedelta(days=365),  # keeps the workers off it
        operation_id="operation-42",
        duration=12.5,
        text="one two three",
    )
    page = (await owner.get(f"/admin/jobs/{job.id}")).text
    for fragment in (
        "lease-holder-id",
        "operation-42",
        "12.5 s",
        "3 words",
        "one two three",
        "<dt>Attempts</dt><dd>2</dd>",
        f"{now.day} {now:%b %Y}, {now:%H:%M:%S}",  # the lease's time, in English (ADR 77)
    ):
        assert fragment in page, fragment
    assert 'id="revive"' not in page  # only dead and failed jobs are revived


async def test_missing_file_and_job_answer_404(
    service: Service, owner: httpx.AsyncClient, recording: Path
) -> None:
    """A job or file that does not exist, or a file whose bytes are gone, is a clear 404."""
    assert (await owner.get("/admin/jobs/no-such-job")).status_code == 404
    assert (await owner.get("/admin/files/no-such-file")).status_code == 404
    job = await write_job(service, state=State.DEAD, source=recording, error="x")
    async with direct_access(service) as (repo, store):
        assert job.source_file_id is not None
        await store.delete(await repo.get_file(job.source_file_id))
    gone = await owner.get(f"/admin/files/{job.source_file_id}")
    assert gone.status_code == 404
    assert "gone" in gone.text


async def test_oversized_form_is_refused_before_it_is_read(anonymous: httpx.AsyncClient) -> None:
    """A huge body posted to the panel is cut off with 413 instead of being parsed."""
    page = await anonymous.get("/admin/login")
    answer = await anonymous.post(
        "/admin/login", data={"csrf": csrf_of(page.text), "password": "x" * 200_000}
    )
    assert answer.status_code == 413
