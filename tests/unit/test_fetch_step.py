"""Links (SPEC §28, ADR 85): taken in by ``take_in``, fetched by their step, then as uploads."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path

import attrs
import pytest

from tests.support import media_site
from tests.support.media_site import MediaSite
from tests.support.world import World, make_world
from transcriber_adapters.fetching import YtDlpFetcher
from transcriber_adapters.memory import MemoryFetcher, MemoryFileStore, MemoryUsageStore, Served
from transcriber_core.deletion import delete_job
from transcriber_core.entities import Job, Origin, State
from transcriber_core.errors import DedupKeyReused, FetchRefused, QuotaExceeded
from transcriber_core.intake import take_in
from transcriber_core.naming import link_digest
from transcriber_core.ports import (
    Fetched,
    FetchLimits,
    FetchProgress,
    Proof,
    Sender,
    Staged,
    Wishes,
)
from transcriber_core.progress import FetchReport, fetch_report_of
from transcriber_core.worker import acquire_next, process

LINK = "https://media.example.org/talks/42?token=s3cr3t"
OWNER = "person:" + "a" * 57
#: 200 KiB: four chunks of the memory fetcher; 12.8 s for the memory converter.
DATA = b"\x01" * (200 * 1024)


class _LinkDoor:
    """A door that names ``url`` instead of staging bytes, as a form with ``url`` does."""

    def __init__(
        self, url: str, *, digest: bool = False, owner: str | None = OWNER, title: str | None = None
    ) -> None:
        self.url = url
        self.digest = link_digest(url) if digest else None
        self.owner = owner
        self.title = title

    async def sender(self) -> Sender:
        return Sender(owner=self.owner)

    async def sender_again(self) -> Sender:
        return Sender(owner=self.owner)

    async def proof(self, first: Job) -> Proof:
        return Proof(digest=link_digest(self.url))

    @contextlib.asynccontextmanager
    async def staged(self) -> AsyncIterator[Staged]:
        wishes = Wishes(title=self.title)
        yield Staged(path=None, extension="", url=self.url, digest=self.digest, wishes=wishes)


@pytest.fixture
def staging(tmp_path: Path) -> Path:
    return tmp_path / "staging"


@pytest.fixture
def fetcher() -> MemoryFetcher:
    served = Served(data=DATA, title="Talk 42", declared_bytes=len(DATA), duration=12.8)
    return MemoryFetcher({LINK: served})


@pytest.fixture
def world(tmp_path: Path, staging: Path, fetcher: MemoryFetcher) -> World:
    made = make_world(tmp_path, files=MemoryFileStore(staging_dir=staging))
    limits = FetchLimits(max_bytes=1024**2, max_seconds=3600.0)
    return _with(made, fetcher=fetcher, fetch_limits=limits)


def _with(world: World, **changes: object) -> World:
    return attrs.evolve(world, services=attrs.evolve(world.services, **changes))


def _left_in(staging: Path) -> list[Path]:
    """What a fetch left in the staging dir: nothing, once it is over."""
    return list(staging.iterdir()) if staging.exists() else []


async def _take(world: World, url: str = LINK) -> Job:
    taken = await take_in(world.services, _LinkDoor(url), origin=Origin.http())
    return taken.job


async def test_a_link_is_fetched_stored_and_transcribed_like_an_upload(
    world: World, staging: Path
) -> None:
    """A link's job starts in fetch with nothing stored, gets its file, then goes on to done."""
    job = await _take(world)
    assert (job.state, job.source_file_id, job.source_url, job.short) == (
        State.FETCH,
        None,
        LINK,
        False,
    )
    assert world.files.names() == []
    fetched = await world.step(State.FETCH)
    assert fetched is not None
    assert fetched.state is State.CONVERT
    assert fetched.source_file_id is not None
    record = await world.repo.get_file(fetched.source_file_id)
    assert (record.size, record.extension) == (len(DATA), ".mp3")
    assert world.files.content(record) == DATA
    done = await world.run_to_end(job.id)
    assert done.state is State.DONE
    assert done.duration == pytest.approx(len(DATA) / 16_000)
    assert _left_in(staging) == []


async def test_the_fetch_notes_its_bytes_while_it_runs(
    world: World, fetcher: MemoryFetcher
) -> None:
    """Mid-way the job shows the bytes so far, the declared total and the percent."""
    job, running = await _held(world, fetcher)
    stored = await _noted(world, job.id)
    assert fetch_report_of(stored) == FetchReport(
        bytes=64 * 1024, total_bytes=len(DATA), percent=32
    )
    fetcher.resume()
    result = await running
    assert result is not None
    assert result.state is State.CONVERT
    assert fetch_report_of(await world.repo.get(job.id)) is None


async def _held(world: World, fetcher: MemoryFetcher) -> tuple[Job, asyncio.Task[Job | None]]:
    """A link's job whose fetch runs in a task, held after its first chunk by the fetcher."""
    job = await _take(world)
    fetcher.pause_after_first_chunk()
    lease = await acquire_next(world.services, State.FETCH)
    assert lease is not None
    running = asyncio.create_task(process(world.services, lease))
    await fetcher.waiting.wait()
    return job, running


async def _noted(world: World, job_id: str) -> Job:
    """The job once its first progress note is written (the note is written in the background)."""
    for _ in range(1000):
        job = await world.repo.get(job_id)
        if job.progress is not None:
            return job
        await asyncio.sleep(0)
    raise AssertionError("no progress was noted")


async def test_an_unknown_size_is_told_as_unknown(world: World, fetcher: MemoryFetcher) -> None:
    """A site that declares no size: the bytes so far, total and percent None."""
    fetcher.served[LINK] = Served(data=DATA)
    job, running = await _held(world, fetcher)
    report = fetch_report_of(await _noted(world, job.id))
    assert report == FetchReport(bytes=64 * 1024, total_bytes=None, percent=None)
    fetcher.resume()
    await running


async def test_a_passing_failure_is_retried_with_the_backoff(
    world: World, fetcher: MemoryFetcher, staging: Path
) -> None:
    """``FetchUnavailable`` keeps the job in fetch with a pause; the next try fetches it."""
    fetcher.served[LINK] = attrs.evolve(fetcher.served[LINK], unavailable_times=1)
    job = await _take(world)
    retried = await world.step(State.FETCH)
    assert retried is not None
    assert (retried.state, retried.error, retried.attempts) == (
        State.FETCH,
        "the link's server did not answer",
        1,
    )
    assert retried.delay_time is not None
    assert await world.step(State.FETCH) is None
    world.later(retried.delay_time - world.clock.now())
    fetched = await world.step(State.FETCH)
    assert fetched is not None
    assert (fetched.state, fetched.error, fetched.attempts) == (State.CONVERT, None, 0)
    assert _left_in(staging) == []
    assert len(fetcher.calls) == 2
    assert job.id == fetched.id


@pytest.mark.parametrize(
    ("served", "code"),
    [
        (Served(data=DATA, declared_bytes=2 * 1024**2), "too_large"),
        (Served(data=b"\x01" * (1024**2 + 1)), "too_large"),
        (Served(data=DATA, duration=7200.0), "too_long"),
        (Served(refused="url_not_allowed"), "url_not_allowed"),
        (Served(refused="unsupported_url"), "unsupported_url"),
    ],
)
async def test_a_refused_fetch_fails_the_job_and_leaves_nothing(
    world: World, fetcher: MemoryFetcher, staging: Path, served: Served, code: str
) -> None:
    """Over a limit (declared or counted) or refused: failed with the code, no file, no folder."""
    fetcher.served[LINK] = served
    job = await _take(world)
    failed = await world.step(State.FETCH)
    assert failed is not None
    assert (failed.state, failed.error, failed.source_file_id) == (State.FAILED, code, None)
    assert world.files.names() == []
    assert _left_in(staging) == []
    assert (await world.repo.get(job.id)).progress is None


async def test_a_job_deleted_mid_fetch_stops_it_and_leaves_nothing(
    world: World, fetcher: MemoryFetcher, staging: Path
) -> None:
    """Deleting a fetching job loses its lease: the download stops, its folder goes, no file."""
    settings = attrs.evolve(world.services.settings, lease_renewal=timedelta(milliseconds=20))
    world = _with(world, settings=settings)
    job, running = await _held(world, fetcher)
    assert len(_left_in(staging)) == 1
    await delete_job(world.services, job.id)
    assert await running is None
    assert fetcher.running == 0
    assert _left_in(staging) == []
    assert world.files.names() == []


async def test_a_cancelled_fetch_leaves_nothing(
    world: World, fetcher: MemoryFetcher, staging: Path
) -> None:
    """A worker cancelled mid-fetch (shutdown): the download stops, its folder goes, no file."""
    job, running = await _held(world, fetcher)
    running.cancel()
    with pytest.raises(asyncio.CancelledError):
        await running
    assert fetcher.running == 0
    assert _left_in(staging) == []
    assert world.files.names() == []
    assert (await world.repo.get(job.id)).state is State.FETCH


@pytest.mark.parametrize(
    ("url", "served", "code"),
    [
        ("ftp://media.example.org/a.mp3", None, "bad_url"),
        ("https://media.example.org/a b.mp3", None, "bad_url"),
        ("https://" + "a" * 2050, None, "bad_url"),
        ("http://10.0.0.1/a.mp3", Served(refused_at_check="url_not_allowed"), "url_not_allowed"),
        (
            "https://video.example.org/playlist?list=1",
            Served(refused_at_check="playlist_not_supported"),
            "playlist_not_supported",
        ),
    ],
)
async def test_a_link_refused_at_intake_stores_nothing(
    world: World, fetcher: MemoryFetcher, url: str, served: Served | None, code: str
) -> None:
    """A malformed link, or one the fetcher refuses at once: ``FetchRefused``, no job."""
    if served is not None:
        fetcher.served[url] = served
    with pytest.raises(FetchRefused) as refused:
        await _take(world, url)
    assert refused.value.code == code
    assert await world.repo.count_by_state() == {}
    assert fetcher.calls == []


async def test_a_service_without_a_fetcher_refuses_links(world: World) -> None:
    """No fetcher configured: ``links_disabled`` at intake."""
    with pytest.raises(FetchRefused) as refused:
        await _take(_with(world, fetcher=None))
    assert refused.value.code == "links_disabled"


async def test_a_link_is_charged_its_measured_length(world: World) -> None:
    """Nothing at intake (a spent day still refuses it), its converted length once measured."""
    usage = MemoryUsageStore(world.clock)
    settings = attrs.evolve(world.services.settings, seconds_per_day=60)
    paid = _with(world, usage=usage, settings=settings)
    job = await _take(paid)
    assert (await usage.usage([OWNER]))[OWNER].today == 0.0
    await paid.run_to_end(job.id)
    assert (await usage.usage([OWNER]))[OWNER].today == pytest.approx(len(DATA) / 16_000)
    await usage.settle(job.id, 60.0)
    with pytest.raises(QuotaExceeded):
        await _take(paid)


async def test_an_idempotency_key_names_one_link(world: World) -> None:
    """The same key and link: the first job again; the same key with another link: refused."""
    first = await take_in(
        world.services, _LinkDoor(LINK, digest=True), origin=Origin.http(), dedup_key="k"
    )
    again = await take_in(
        world.services, _LinkDoor(LINK, digest=True), origin=Origin.http(), dedup_key="k"
    )
    assert (again.job.id, again.is_new) == (first.job.id, False)
    with pytest.raises(DedupKeyReused):
        await take_in(
            world.services,
            _LinkDoor(LINK + "&other", digest=True),
            origin=Origin.http(),
            dedup_key="k",
        )
    assert sum((await world.repo.count_by_state()).values()) == 1


class _Outside(MemoryFetcher):
    """A fetcher that breaks the port's promise: it answers a file outside its folder."""

    def __init__(self, elsewhere: Path) -> None:
        super().__init__()
        self.elsewhere = elsewhere

    async def fetch(
        self, url: str, into: Path, *, limits: FetchLimits, on_progress: FetchProgress
    ) -> Fetched:
        self.elsewhere.write_bytes(b"not the download")
        return Fetched(path=self.elsewhere)


async def test_a_file_outside_the_fetchs_folder_is_never_stored(
    world: World, tmp_path: Path
) -> None:
    """Whatever a fetcher answers, only a file inside its folder becomes the recording."""
    elsewhere = tmp_path / "elsewhere.mp3"
    world = _with(world, fetcher=_Outside(elsewhere))
    await _take(world)
    failed = await world.step(State.FETCH)
    assert failed is not None
    assert (failed.state, failed.error) == (State.FAILED, "unsupported_url")
    assert world.files.names() == []
    assert elsewhere.read_bytes() == b"not the download"


@pytest.mark.parametrize(
    ("given", "site", "kept"),
    [
        (None, "Talk 42", "Talk 42"),
        ("My own name", "Talk 42", "My own name"),
        (None, "  Talk\n\u202e42\t" + "x" * 300, ("Talk 42 " + "x" * 300)[:200]),
        (None, None, None),
        (None, " \n ", None),
    ],
)
async def test_the_pages_title_is_the_default_title(
    world: World, fetcher: MemoryFetcher, given: str | None, site: str | None, kept: str | None
) -> None:
    """A link's recording is named by its page, cleaned to one line; a title sent stays."""
    fetcher.served[LINK] = attrs.evolve(fetcher.served[LINK], title=site)
    taken = await take_in(world.services, _LinkDoor(LINK, title=given), origin=Origin.http())
    await world.step(State.FETCH)
    assert (await world.repo.get(taken.job.id)).title == kept


async def test_the_yt_dlp_fetcher_through_the_step(
    world: World, staging: Path, tmp_path: Path
) -> None:
    """End to end with yt-dlp on a local site: the page's recording stored, titled, converted."""
    (tmp_path / "site").mkdir()
    site = MediaSite(media_site.SITE_ADDRESS, tmp_path / "site").start()
    try:
        fetcher = YtDlpFetcher(rule=media_site.rule, lookup=media_site.lookup)
        real = _with(world, fetcher=fetcher)
        job = await _take(real, site.url("/page.html", "site.test"))
        fetched = await real.step(State.FETCH)
    finally:
        site.stop()
    assert fetched is not None
    assert (fetched.state, fetched.error) == (State.CONVERT, None)
    assert fetched.source_file_id is not None
    record = await real.repo.get_file(fetched.source_file_id)
    assert real.files.content(record) == site.tone
    assert (await real.repo.get(job.id)).title == media_site.TITLE
    assert _left_in(staging) == []
