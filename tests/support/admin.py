"""Driving the admin panel of a running service: setup link, login, forms, jobs made by hand.

The panel is reached over HTTP like a browser would (cookies, CSRF fields
read from the page). Jobs the HTTP API cannot make (dead ones, hundreds at
once) are written straight into the service's SQLite file and file store
through the real adapters on a second connection, which SQLite allows
while the service runs.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import secrets
import weakref
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx

from tests.support.service import Service, running_service
from transcriber_adapters.filesystem import FilesystemFileStore
from transcriber_adapters.sqlite import SqliteJobRepository
from transcriber_app.bootstrap import DATABASE_NAME, FILES_DIR, STAGING_DIR, Runtime
from transcriber_app.web import create_app
from transcriber_app.web.auth import AdminState
from transcriber_core.entities import FileRecord, Job, Origin, State

#: The owner password the tests set.
PASSWORD = "correct horse battery staple"
#: Where the clock of an in-process panel starts.
T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)

_SETUP_URL = re.compile(r'event=admin\.setup_link url="?(?P<url>[^"\s]+)"?')
_CSRF = re.compile(r'name="csrf" value="(?P<token>[^"]+)"')
_JOB_LINK = re.compile(r'class="id[^"]*" href="/admin/jobs/(?P<id>[^"]+)"')


def setup_links(service: Service) -> list[str]:
    """Every setup link the service logged, in order."""
    return [match["url"] for match in _SETUP_URL.finditer(service.logs())]


def setup_link(service: Service) -> str:
    """The one setup link the service logged; fails unless there is exactly one."""
    links = setup_links(service)
    assert len(links) == 1, f"expected one setup link, got {len(links)}:\n{service.logs()}"
    return links[0]


def csrf_of(html: str) -> str:
    """The CSRF token of the first form on a page."""
    match = _CSRF.search(html)
    assert match is not None, "the page has no form with a CSRF token"
    return match["token"]


def job_ids_of(html: str) -> list[str]:
    """The job ids a jobs list page links to, top to bottom."""
    return [match["id"] for match in _JOB_LINK.finditer(html)]


def in_process_client(runtime: Runtime, admin: AdminState | None = None) -> httpx.AsyncClient:
    """A client of the app built over ``runtime`` in this process, from one fixed client address."""
    app = create_app(runtime, admin=admin)
    return httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app, client=("192.0.2.7", 50000)),
        base_url="http://127.0.0.1",
        follow_redirects=False,
    )


def admin_client(service: Service) -> httpx.AsyncClient:
    """A client with its own cookie jar that does not follow redirects (tests look at them)."""
    return httpx.AsyncClient(base_url=service.base_url, timeout=10.0, follow_redirects=False)


async def create_owner(client: httpx.AsyncClient, link: str, password: str = PASSWORD) -> None:
    """Open the setup link and set the owner's password; the client is then logged in."""
    page = await client.get(link)
    assert page.status_code == 200, page.text
    token = httpx.URL(link).params["token"]
    answer = await client.post(
        "/admin/setup",
        data={
            "csrf": csrf_of(page.text),
            "token": token,
            "password": password,
            "confirm": password,
        },
    )
    assert answer.status_code == 303, answer.text
    assert answer.headers["location"] == "/admin/"


async def log_in(client: httpx.AsyncClient, password: str = PASSWORD) -> httpx.Response:
    """Fill in the login form; the answer to the post."""
    page = await client.get("/admin/login")
    return await client.post(
        "/admin/login", data={"csrf": csrf_of(page.text), "password": password}
    )


@contextlib.contextmanager
def service_with_owner(
    folder: Path, *, config: Mapping[str, Mapping[str, Any]] | None = None
) -> Iterator[Service]:
    """A running service on ``folder`` (with ``config``) whose owner was made by the setup link."""
    with running_service(folder, config=config) as running:

        async def owner() -> None:
            async with admin_client(running) as client:
                await create_owner(client, setup_link(running))

        asyncio.run(owner())
        yield running


@contextlib.asynccontextmanager
async def owner_client(service: Service) -> AsyncIterator[httpx.AsyncClient]:
    """A client of ``service`` logged in as the owner."""
    async with admin_client(service) as client:
        answer = await log_in(client)
        assert answer.status_code == 303, answer.text
        yield client


async def log_in_waiting(
    client: httpx.AsyncClient, password: str = PASSWORD, *, within: float = 10.0
) -> httpx.Response:
    """Log in, waiting out the back-off an earlier wrong password left (429 with Retry-After)."""
    deadline = asyncio.get_running_loop().time() + within
    while True:
        answer = await log_in(client, password)
        if answer.status_code != 429:
            return answer
        wait = float(answer.headers["retry-after"])
        assert asyncio.get_running_loop().time() + wait < deadline, "the back-off did not end"
        await asyncio.sleep(wait)


async def post_form(client: httpx.AsyncClient, page_path: str, action: str, **fields: str) -> Any:
    """Post ``fields`` to ``action`` with the CSRF token of the page at ``page_path``."""
    page = await client.get(page_path)
    assert page.status_code == 200, page.text
    return await client.post(action, data={"csrf": csrf_of(page.text), **fields})


async def upload(client: httpx.AsyncClient, data: bytes, filename: str = "voice.mp3") -> str:
    """Send a recording through ``POST /api/audio``; the new job's id."""
    answer = await client.post("/api/audio", files={"file": (filename, data, "audio/mpeg")})
    assert answer.status_code == 202, answer.text
    job_id: str = answer.json()["job_id"]
    return job_id


class WriterClock:
    """The clock of a repository opened beside the service: it reads what the writer set."""

    def __init__(self) -> None:
        self.current = datetime.now(UTC)

    def now(self) -> datetime:
        """The time the writer set last (the real time at first)."""
        return self.current


#: The clock of each repository ``direct_access`` opened, which the writers below move.
_CLOCKS: weakref.WeakKeyDictionary[SqliteJobRepository, WriterClock] = weakref.WeakKeyDictionary()


async def create_at(
    repo: SqliteJobRepository, job: Job, records: Sequence[FileRecord] = ()
) -> None:
    """Store ``job`` as created at its ``created``: the store stamps it from the clock set here."""
    _CLOCKS[repo].current = job.created
    await repo.create(job, records)


@contextlib.asynccontextmanager
async def direct_access(
    service: Service,
) -> AsyncIterator[tuple[SqliteJobRepository, FilesystemFileStore]]:
    """The service's own database and file store, opened a second time beside it."""
    clock = WriterClock()
    repo = await SqliteJobRepository.open(service.data_dir / DATABASE_NAME, clock=clock)
    _CLOCKS[repo] = clock
    try:
        yield (
            repo,
            FilesystemFileStore(
                service.data_dir / FILES_DIR, staging_dir=service.data_dir / STAGING_DIR
            ),
        )
    finally:
        await repo.close()


async def write_job(
    service: Service,
    *,
    state: State,
    source: Path | None = None,
    created: datetime | None = None,
    **fields: Any,
) -> Job:
    """Write a job in ``state`` (with ``source`` stored as its recording) straight into the data."""
    now = created or datetime.now(UTC)
    async with direct_access(service) as (repo, store):
        records: Sequence[FileRecord] = ()
        if source is not None:
            record = await store.put(
                secrets.token_urlsafe(16), source.suffix.lower(), source, now=now
            )
            records = (record,)
            fields["source_file_id"] = record.id
        fields.setdefault("origin", Origin.http())
        job = Job(
            id=secrets.token_urlsafe(16),
            state=state,
            created=now,
            updated=now,
            **fields,
        )
        await create_at(repo, job, records)
    return job


async def write_jobs(
    service: Service, count: int, *, state: State = State.DONE, start: datetime | None = None
) -> list[Job]:
    """``count`` jobs without files in ``state``, created a second apart from ``start``."""
    first = start or datetime.now(UTC) - timedelta(days=1)
    async with direct_access(service) as (repo, _):
        jobs = []
        for n in range(count):
            moment = first + timedelta(seconds=n)
            job = Job(
                id=secrets.token_urlsafe(16),
                state=state,
                origin=Origin.http(),
                text=f"job {n}" if state is State.DONE else None,
                error=None if state is State.DONE else f"reason {n}",
                created=moment,
                updated=moment,
            )
            await create_at(repo, job)
            jobs.append(job)
    return jobs
