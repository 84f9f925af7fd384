"""Deleting jobs and retention over the pipeline (ADR 36): nothing left, nothing early.

Memory adapters for files, converter and recognizer; the job repository is
memory or SQLite on a real file, both reading the world's manual clock.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import datetime, timedelta
from pathlib import Path
from typing import TypeVar

import attrs
import pytest

from tests.support.delegate import Delegate
from tests.support.world import World, make_world
from transcriber_adapters.memory import MemoryFileStore
from transcriber_adapters.sqlite import SqliteJobRepository
from transcriber_core import deletion
from transcriber_core.entities import FileRecord, Location, State
from transcriber_core.errors import FileNotFound, JobNotFound, StorageUnavailable
from transcriber_core.naming import derived_file_id
from transcriber_core.policy import DecodeLimits, Settings, files_go_at, job_goes_at
from transcriber_core.ports import Clock, RecognizerLimits, Removed, Silence
from transcriber_core.retention import sweep
from transcriber_core.steps import CONVERTED
from transcriber_core.worker import acquire_next, process

#: A sweep may run again a second after the last one, so a test can sweep at each instant.
SETTINGS = Settings(
    recordings_kept=timedelta(days=7),
    jobs_kept=timedelta(days=30),
    sweep_interval=timedelta(seconds=1),
    sweep_batch=2,
)
_TICK = timedelta(seconds=1)
T = TypeVar("T")


@pytest.fixture(params=["memory", "sqlite"])
async def world(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[World]:
    """A world whose job repository reads the world's clock."""
    world = make_world(tmp_path, settings=SETTINGS)
    if request.param == "sqlite":
        repo = await SqliteJobRepository.open(tmp_path / "jobs.db", clock=world.clock)
        world.repo = repo
        world.services = attrs.evolve(world.services, repo=repo)
    yield world
    await world.repo.close()


def split_long(world: World) -> None:
    """Recordings last 150 s and the recognizer takes 60 s: each job is done in three parts."""
    world.converter.duration = 150.0
    world.converter.limits = DecodeLimits(min_bytes_per_second=0.01)
    world.converter.silences = (Silence(start=50, end=51), Silence(start=100, end=102))
    world.recognizer.limits = RecognizerLimits(max_seconds=60)


async def test_delete_removes_the_job_its_transcript_parts_and_every_file(world: World) -> None:
    """After delete_job nothing of a split, done job is left: no row, no part, no byte."""
    split_long(world)
    job = await world.run_to_end((await world.submit()).id)
    assert job.state is State.DONE
    assert len(await world.repo.get_parts(job.id)) == 3
    assert len(world.files.names()) == 5  # the recording, the converted audio, three parts
    assert await deletion.delete_job(world.services, job.id) == 5
    assert world.files.names() == []
    with pytest.raises(JobNotFound):
        await world.repo.get(job.id)
    assert await world.repo.get_parts(job.id) == []
    with pytest.raises(JobNotFound):
        await deletion.delete_job(world.services, job.id)


class Bucket(MemoryFileStore):
    """Object Storage in memory: its records are located in S3, as the S3 store's are."""

    @property
    def location(self) -> Location:
        return Location.S3

    async def put(
        self, file_id: str, extension: str, source: Path, *, now: datetime, move: bool = False
    ) -> FileRecord:
        record = await super().put(file_id, extension, source, now=now, move=move)
        return attrs.evolve(record, location=Location.S3, object_key=f"t/{record.name}")


async def test_delete_removes_the_object_storage_copy_of_a_running_job(tmp_path: Path) -> None:
    """A job waiting for its recognizer is deleted: its Object Storage copy goes with it."""
    bucket = Bucket()
    world = make_world(tmp_path, settings=SETTINGS, recognizer_files=bucket)
    world.recognizer.checks_before_done = 5
    job = await world.submit()
    await world.step(State.CONVERT)
    checking = await world.step(State.RECOGNIZE)
    assert checking is not None
    assert checking.state is State.CHECK
    assert len(bucket.names()) == 1
    assert await deletion.delete_job(world.services, job.id) == 3
    assert bucket.names() == []
    assert world.files.names() == []


class RefusingStore(Delegate):
    """A file store that cannot delete now."""

    async def delete_many(self, records: object) -> None:
        raise StorageUnavailable


async def test_a_store_that_cannot_delete_leaves_the_job_deleted_and_says_how_many(
    world: World, caplog: pytest.LogCaptureFixture
) -> None:
    """The job is gone either way; the log counts the files left, naming none of them."""
    job = await world.run_to_end((await world.submit()).id)
    names = world.files.names()
    services = attrs.evolve(world.services, files=RefusingStore(world.files))
    with caplog.at_level(logging.WARNING, logger="transcriber.deletion"):
        assert await deletion.delete_job(services, job.id) == 2
    with pytest.raises(JobNotFound):
        await world.repo.get(job.id)
    [line] = [r for r in caplog.records if r.getMessage() == "file.delete_error"]
    assert (line.files, line.error_type) == (2, "StorageUnavailable")  # type: ignore[attr-defined]
    assert all(name not in str(vars(r)) for r in caplog.records for name in names)


async def test_a_step_whose_job_is_deleted_meanwhile_leaves_nothing(world: World) -> None:
    """Convert stores its audio, the job is deleted, the fenced save fails: the audio goes too."""
    gate = world.gate_converter()
    job = await world.submit()
    lease = await acquire_next(world.services, State.CONVERT)
    assert lease is not None
    running = asyncio.create_task(process(world.services, lease))
    await gate.entered.wait()
    await deletion.delete_job(world.services, job.id)
    assert world.files.names() == []
    gate.release.set()
    assert await running is None
    assert world.files.names() == []
    with pytest.raises(FileNotFound):
        await world.repo.get_file(derived_file_id(job.id, CONVERTED))


async def test_a_step_that_lost_its_lease_to_another_worker_keeps_its_files(
    world: World,
) -> None:
    """A lease lost to another worker is no deletion: the stored audio stays for the new holder."""
    gate = world.gate_converter()
    job = await world.submit()
    lease = await acquire_next(world.services, State.CONVERT)
    assert lease is not None
    running = asyncio.create_task(process(world.services, lease))
    await gate.entered.wait()
    world.later(SETTINGS.lease + _TICK)
    assert await acquire_next(world.services, State.CONVERT) is not None
    gate.release.set()
    assert await running is None
    converted = await world.repo.get_file(derived_file_id(job.id, CONVERTED))
    assert converted.name in world.files.names()


async def test_files_go_at_recordings_days_and_the_job_at_jobs_days(world: World) -> None:
    """Swept every second: the files go exactly at recordings_kept, the job at jobs_kept."""
    job = await world.run_to_end((await world.submit()).id)
    assert job.ended == world.clock.now()
    files_at, job_at = files_go_at(job, SETTINGS), job_goes_at(job, SETTINGS)
    assert files_at is not None
    assert job_at is not None

    async def sweep_at(moment: datetime) -> None:
        world.clock.set(moment)
        assert await sweep(world.services) is not None

    await sweep_at(files_at - _TICK)
    assert len(world.files.names()) == 2
    await sweep_at(files_at)
    assert world.files.names() == []
    kept = await world.repo.get(job.id)
    assert kept.text == job.text
    assert kept.file_ids() == ()
    await sweep_at(job_at - _TICK)
    assert await world.repo.get(job.id) == kept
    await sweep_at(job_at)
    with pytest.raises(JobNotFound):
        await world.repo.get(job.id)


async def test_a_running_job_is_never_swept(world: World) -> None:
    """However old, a job that has not ended keeps its files and itself."""
    job = await world.submit()
    world.later(SETTINGS.jobs_kept * 2)
    swept = await sweep(world.services)
    assert swept is not None
    assert swept.files == 0
    assert (await world.repo.get(job.id)).source_file_id == job.source_file_id
    assert len(world.files.names()) == 1


async def test_sweeps_go_in_batches_and_log_counts_only(
    world: World, caplog: pytest.LogCaptureFixture
) -> None:
    """Five ended jobs with a batch of two: all swept in one sweep, its log line holds counts."""
    ended = [await world.run_to_end((await world.submit()).id) for _ in range(5)]
    world.later(SETTINGS.jobs_kept)
    with caplog.at_level(logging.INFO, logger="transcriber.retention"):
        swept = await sweep(world.services)
    assert swept is not None
    assert (swept.jobs, swept.files, swept.failed) == (5, 10, 0)
    for job in ended:
        with pytest.raises(JobNotFound):
            await world.repo.get(job.id)
    [line] = [r for r in caplog.records if r.getMessage() == "retention.swept"]
    assert {key: getattr(line, key) for key in ("jobs", "recordings", "files", "failed")} == {
        "jobs": 5,
        "recordings": 0,
        "files": 10,
        "failed": 0,
    }
    assert all(job.id not in r.getMessage() for r in caplog.records for job in ended)


class SlowSweeps(Delegate):
    """A repository whose job sweep commits its batch, then waits before answering."""

    def __init__(self, inner: object) -> None:
        super().__init__(inner)
        self.committed = asyncio.Event()
        self.release = asyncio.Event()

    async def remove_ended_jobs(self, *, age: timedelta, limit: int) -> Removed:
        removed: Removed = await self.inner.remove_ended_jobs(age=age, limit=limit)
        self.committed.set()
        await self.release.wait()
        return removed


async def test_a_sweep_cancelled_mid_batch_still_deletes_that_batchs_bytes(
    world: World,
) -> None:
    """Shutdown cancels the sweep after the database let a batch go: its files go anyway."""
    for _ in range(3):
        await world.run_to_end((await world.submit()).id)
    world.later(SETTINGS.jobs_kept)
    slow = SlowSweeps(world.repo)
    services = attrs.evolve(world.services, repo=slow)
    sweeping = asyncio.create_task(sweep(services))
    await slow.committed.wait()
    sweeping.cancel()
    slow.release.set()
    with pytest.raises(asyncio.CancelledError):
        await sweeping
    assert len(world.files.names()) == 2  # the first batch's two jobs lost their files
    assert len(await world.repo.list_jobs()) == 1


async def test_one_sweep_per_interval_whoever_asks(world: World) -> None:
    """A second process asking within the interval does not sweep; after it, one does again."""
    other = attrs.evolve(world.services)
    assert await sweep(world.services) is not None
    assert await sweep(other) is None
    world.later(SETTINGS.sweep_interval)
    assert await sweep(other) is not None
    assert await sweep(world.services) is None


# -- two repositories on one SQLite file, in two threads ------------------------------


def _in_thread(path: Path, clock: Clock, work: Callable[[SqliteJobRepository], Awaitable[T]]) -> T:
    """Run ``work`` on a repository of its own, in an event loop of its own."""

    async def run() -> T:
        repo = await SqliteJobRepository.open(path, clock=clock)
        try:
            return await work(repo)
        finally:
            await repo.close()

    return asyncio.run(run())


async def test_two_processes_sweeping_at_once_delete_each_thing_once(tmp_path: Path) -> None:
    """Two repositories on one file drain the same ended jobs at once: every record goes once."""
    world = make_world(tmp_path, settings=SETTINGS)
    path = tmp_path / "shared.db"
    repo = await SqliteJobRepository.open(path, clock=world.clock)
    world.repo = repo
    world.services = attrs.evolve(world.services, repo=repo)
    expected = set()
    for _ in range(40):
        job = await world.run_to_end((await world.submit()).id)
        expected.update(job.file_ids())
    await repo.close()
    world.later(SETTINGS.jobs_kept)
    together = threading.Barrier(2)

    async def drain(mine: SqliteJobRepository) -> list[str]:
        taken: list[str] = []
        together.wait()
        while True:
            removed = await mine.remove_ended_jobs(age=SETTINGS.jobs_kept, limit=3)
            taken.extend(record.id for record in removed.files)
            if not removed.jobs:
                return taken

    first, second = await asyncio.gather(
        asyncio.to_thread(_in_thread, path, world.clock, drain),
        asyncio.to_thread(_in_thread, path, world.clock, drain),
    )
    assert sorted(first + second) == sorted(expected)


async def test_two_processes_asking_at_once_take_the_sweep_once(tmp_path: Path) -> None:
    """Eight threads with eight repositories on one file ask for the sweep: one gets it."""
    world = make_world(tmp_path, settings=SETTINGS)
    path = tmp_path / "shared.db"
    await (await SqliteJobRepository.open(path, clock=world.clock)).close()

    async def take(mine: SqliteJobRepository) -> bool:
        return await mine.take_sweep("retention", lease=timedelta(hours=1))

    won = await asyncio.gather(
        *(asyncio.to_thread(_in_thread, path, world.clock, take) for _ in range(8))
    )
    assert sorted(won) == [False] * 7 + [True]
