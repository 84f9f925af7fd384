"""A daily quota holds for every container format, for uploads racing in (SPEC §29, ADR 67).

The red team's repro: six 50-s AU recordings sent at once passed a 60-s
quota, because only WAV, Ogg and MP4 headers were read at intake. Here six
recordings of each format race into one payer's day from real threads
(each its own event loop and its own store connection, as six API
processes would), on the memory, SQLite and PostgreSQL usage stores, with
the real ffmpeg counting them.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import attrs
import pytest

from tests.support.media import encoded, restarting_timestamps
from tests.support.world import World, make_world
from transcriber_adapters.ffmpeg import FfmpegConverter
from transcriber_adapters.memory import ManualClock, MemoryUsageStore
from transcriber_adapters.postgres import Database, PostgresUsageStore
from transcriber_adapters.sqlite import SqliteUsageStore
from transcriber_contracts.racing import in_threads
from transcriber_core.entities import Origin, State
from transcriber_core.errors import QuotaExceeded, UnreadableMedia
from transcriber_core.intake import submit
from transcriber_core.ports import UsageStore
from transcriber_core.usage import Measured

T0 = datetime(2026, 3, 1, 12, tzinfo=UTC)
#: A quota of six seconds a day: one five-second recording fits, a second does not.
QUOTA = 6
SECONDS = 5.0
RACERS = 6
PAYER = "person:" + "b" * 57
#: Opens one more usage store on the test's database: the store and how to close it.
OpenUsage = Callable[[], Awaitable[tuple[UsageStore, Callable[[], Awaitable[None]]]]]

#: Formats whose length no header the intake read declared before (ADR 59), and a Matroska
#: file whose timestamps start again every 2 s: its container says 2 s, its samples 5.
FORMATS: dict[str, Callable[[Path], Path]] = {
    ".au": lambda path: encoded(path, SECONDS, "-ar", "8000", "-c:a", "pcm_mulaw"),
    ".mp3": lambda path: encoded(path, SECONDS, "-ar", "16000", "-c:a", "libmp3lame"),
    ".flac": lambda path: encoded(path, SECONDS, "-ar", "16000", "-c:a", "flac"),
    ".aiff": lambda path: encoded(path, SECONDS, "-ar", "8000", "-c:a", "pcm_s16be"),
    ".mka": lambda path: restarting_timestamps(path, SECONDS),
}


async def _nothing() -> None:
    """Closing a memory store releases nothing."""


@pytest.fixture
def clock() -> ManualClock:
    """The stores' clock: noon, so the race is within one UTC day."""
    return ManualClock(T0)


@pytest.fixture
async def sqlite_file(clock: ManualClock, tmp_path: Path) -> AsyncIterator[Path]:
    """A migrated SQLite file, so the racers' own opens do not race to create it."""
    first = await SqliteUsageStore.open(tmp_path / "jobs.db", clock=clock)
    yield tmp_path / "jobs.db"
    await first.close()


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def open_usage(request: pytest.FixtureRequest, clock: ManualClock) -> OpenUsage:
    """Opens a usage store on one shared database of the parametrised kind, per racer."""
    if request.param == "memory":
        shared = MemoryUsageStore(clock)

        async def memory() -> tuple[UsageStore, Callable[[], Awaitable[None]]]:
            return MemoryUsageStore(database=shared.database), _nothing

        return memory
    if request.param == "sqlite":
        path = request.getfixturevalue("sqlite_file")

        async def sqlite() -> tuple[UsageStore, Callable[[], Awaitable[None]]]:
            store = await SqliteUsageStore.open(path, clock=clock)
            return store, store.close

        return sqlite
    url = request.getfixturevalue("postgres_url")
    # Emptied and migrated by the shared fixture before the racers open their pools.
    request.getfixturevalue("pg_database")

    async def postgres() -> tuple[UsageStore, Callable[[], Awaitable[None]]]:
        database = await Database.open(url, pool_size=1)
        return PostgresUsageStore(database, clock=clock), database.close

    return postgres


def _world(tmp_path: Path, clock: ManualClock) -> World:
    """Memory jobs and files, a quota of ``QUOTA`` and the real ffmpeg as the meter."""
    world = make_world(tmp_path, clock=clock)
    # A ceiling no count of 5 s reaches on any box: every racer is counted, none charged its most.
    settings = attrs.evolve(
        world.services.settings, seconds_per_day=QUOTA, measure_ceiling=timedelta(minutes=10)
    )
    services = attrs.evolve(world.services, settings=settings, meter=FfmpegConverter())
    return attrs.evolve(world, services=services)


def _race(world: World, open_usage: OpenUsage, sources: list[Path], extension: str) -> list[bool]:
    """Submit every source for ``PAYER`` at once from its own thread; True where it was taken."""

    async def racer(n: int, ready: Callable[[], object]) -> bool:
        usage, close = await open_usage()
        try:
            services = attrs.evolve(world.services, usage=usage)
            ready()
            try:
                await submit(
                    services,
                    sources[n],
                    extension=extension,
                    origin=Origin.http(),
                    owner=PAYER,
                )
            except QuotaExceeded:
                return False
            return True
        finally:
            await close()

    return in_threads(len(sources), racer)


@pytest.mark.parametrize("extension", list(FORMATS))
async def test_parallel_uploads_past_the_quota_are_refused_in_every_format(
    tmp_path: Path, clock: ManualClock, open_usage: OpenUsage, extension: str
) -> None:
    """Six 5-s recordings at once against a 6-s day: one is taken, five refused, 5 s counted."""
    recording = FORMATS[extension](tmp_path / f"tone{extension}")
    sources = []
    for n in range(RACERS):
        copy = tmp_path / f"upload-{n}{extension}"
        copy.write_bytes(recording.read_bytes())
        sources.append(copy)
    world = _world(tmp_path, clock)
    taken = _race(world, open_usage, sources, extension)
    assert taken.count(True) == 1, taken
    assert await world.repo.count_by_state() == {State.CONVERT: 1}
    usage, close = await open_usage()
    try:
        used = (await usage.usage([PAYER]))[PAYER]
    finally:
        await close()
    assert used.today == pytest.approx(SECONDS, abs=0.1)


class _Slow:
    """A meter stopped by its ceiling before it counted anything: only the worst case is known."""

    def __init__(self, most: float) -> None:
        self.most = most

    async def measure(self, path: Path, *, up_to: float, within: timedelta) -> Measured:
        return Measured(counted=0.0, whole=False, most=self.most)


def _slow_world(tmp_path: Path, clock: ManualClock) -> tuple[World, MemoryUsageStore]:
    """A world with an hour's quota whose meter always reaches its ceiling (2,000 s at most)."""
    world = make_world(tmp_path, clock=clock)
    usage = MemoryUsageStore(clock)
    settings = attrs.evolve(world.services.settings, seconds_per_day=3600)
    world.services = attrs.evolve(
        world.services, settings=settings, usage=usage, meter=_Slow(2000.0)
    )
    return world, usage


async def _send(world: World, name: str) -> None:
    """Submit a few bytes called ``name`` as ``PAYER``'s upload."""
    source = world.tmp / name
    source.write_bytes(b"bytes")
    await submit(world.services, source, extension=".mp3", origin=Origin.http(), owner=PAYER)


async def test_a_recording_not_counted_in_time_is_charged_the_most_it_can_last(
    tmp_path: Path, clock: ManualClock
) -> None:
    """Past the measure's ceiling the charge is the file's worst case, so a burst still stops."""
    world, usage = _slow_world(tmp_path, clock)
    await _send(world, "first.mp3")
    with pytest.raises(QuotaExceeded) as refused:
        await _send(world, "second.mp3")
    assert (refused.value.incoming, refused.value.left) == (2000.0, 1600.0)
    assert not refused.value.exact
    assert (await usage.usage([PAYER]))[PAYER].today == 2000.0


async def test_a_recording_the_converter_refuses_counts_nothing(
    tmp_path: Path, clock: ManualClock
) -> None:
    """A worst case reserved at intake is given back when conversion refuses the recording."""
    world, usage = _slow_world(tmp_path, clock)
    await _send(world, "refused.mp3")
    assert (await usage.usage([PAYER]))[PAYER].today == 2000.0
    world.converter.fail_next(UnreadableMedia("not audio"))
    job = await world.step(State.CONVERT)
    assert job is not None
    assert job.state is State.FAILED
    assert (await usage.usage([PAYER]))[PAYER].today == 0.0
