"""The ``Removals`` role: deleting a job at its owner's word, sweep leases and retention (ADR 36).

Subclass with the fixtures ``repo`` and ``another_repo`` (``job_repository``'s docstring).
"""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest

from transcriber_contracts.repository_support import (
    LEASE,
    NOW,
    OpenAnother,
    acquire,
    create,
    make_file,
    make_job,
    renew,
    stored,
)
from transcriber_core.clocks import ManualClock
from transcriber_core.entities import (
    FileRecord,
    Job,
    JobPart,
    State,
)
from transcriber_core.errors import FileNotFound, JobNotFound, LeaseLost
from transcriber_core.outbox import end_deliveries
from transcriber_core.ports import JobRepository, Removed
from transcriber_core.transitions import Actor, transition

FILES_AGE = timedelta(days=7)
JOBS_AGE = timedelta(days=30)


class RemovalsContract:
    """Deletion, sweep leases and retention (ADR 36).

    Subclass and provide the fixtures ``repo`` and ``another_repo`` as for
    ``JobRepositoryContract`` (module docstring); an adapter's test class
    usually subclasses both contracts. Ages are judged by the store's clock.
    """

    @pytest.fixture
    def clock(self) -> ManualClock:
        """The store's clock; the adapter's fixtures build their repositories on it."""
        return ManualClock(NOW)

    async def _ended_job(
        self, repo: JobRepository, clock: ManualClock, *, parts: bool = False, **changes: object
    ) -> tuple[Job, list[FileRecord]]:
        """A done job with a recording, converted audio and, if asked, two parts with files."""
        now = clock.now()
        source, converted = make_file(created=now), make_file(created=now, extension=".ogg")
        job = make_job(created=now, state=State.CHECK, source_file_id=source.id, **changes)
        await create(clock, repo, job, [source, converted])
        files = [source, converted]
        leased = await acquire(clock, repo, State.CHECK, now=now, acquisition_id="lease-" + job.id)
        assert leased is not None
        if parts:
            part_files = [make_file(created=now) for _ in range(3)]
            for record in part_files:
                await repo.put_file(record)
            files.extend(part_files)
            stored_parts = [
                JobPart(
                    job_id=job.id,
                    index=0,
                    start=0.0,
                    end=5.0,
                    file_id=part_files[0].id,
                    storage_file_id=part_files[1].id,
                    text="one",
                ),
                JobPart(
                    job_id=job.id, index=1, start=5.0, end=9.0, file_id=part_files[2].id, text="two"
                ),
            ]
            await repo.save_parts_if_held(job.id, stored_parts, acquisition_id="lease-" + job.id)
        done = transition(leased, State.DONE, now=now, converted_file_id=converted.id, text="done")
        lease = "lease-" + job.id
        # As a worker saves an end: with the deliveries the core decides for it.
        await repo.save_if_held(done, acquisition_id=lease, deliveries=end_deliveries(done))
        return done, files

    # -- delete ------------------------------------------------------------------

    async def test_delete_takes_the_job_its_parts_and_file_records(
        self, repo: JobRepository, clock: ManualClock
    ) -> None:
        """A deleted job is gone with its parts and every file record it or its parts named."""
        job, files = await self._ended_job(repo, clock, parts=True)
        other, other_files = await self._ended_job(repo, clock)
        removed = await repo.delete_job(job.id)
        assert removed.jobs == (job.id,)
        assert sorted(removed.files, key=lambda f: f.id) == sorted(files, key=lambda f: f.id)
        with pytest.raises(JobNotFound):
            await repo.get(job.id)
        assert await repo.get_parts(job.id) == []
        for record in files:
            with pytest.raises(FileNotFound):
                await repo.get_file(record.id)
        assert await repo.get(other.id) == other
        for record in other_files:
            assert await repo.get_file(record.id) == record

    async def test_delete_of_an_unknown_or_deleted_job_is_not_found(
        self, repo: JobRepository, clock: ManualClock
    ) -> None:
        """Deleting twice hands the records out once; the second delete finds no job."""
        job, _ = await self._ended_job(repo, clock)
        await repo.delete_job(job.id)
        with pytest.raises(JobNotFound):
            await repo.delete_job(job.id)
        with pytest.raises(JobNotFound):
            await repo.delete_job("no-such-job")

    async def test_a_worker_holding_a_deleted_job_writes_nothing(
        self, repo: JobRepository, clock: ManualClock
    ) -> None:
        """Renew, save and part saves of a deleted job are LeaseLost and bring nothing back."""
        [job] = await stored(clock, repo, make_job(state=State.RECOGNIZE))
        leased = await acquire(clock, repo, State.RECOGNIZE, acquisition_id="lease-held")
        assert leased is not None
        await repo.delete_job(job.id)
        part = JobPart(job_id=job.id, index=0, start=0.0, end=1.0)
        with pytest.raises(LeaseLost):
            await renew(clock, repo, job.id, acquisition_id="lease-held", now=NOW)
        with pytest.raises(LeaseLost):
            await repo.save_parts_if_held(job.id, [part], acquisition_id="lease-held")
        done = transition(leased, State.CHECK, now=NOW, operation_id="op")
        with pytest.raises(LeaseLost):
            await repo.save_if_held(done, acquisition_id="lease-held")
        with pytest.raises(JobNotFound):
            await repo.get(job.id)
        assert await repo.get_parts(job.id) == []

    async def test_a_deleted_jobs_deliveries_go_with_it(
        self, repo: JobRepository, clock: ManualClock
    ) -> None:
        """A job deleted with its end's webhook still owed leaves no delivery behind to be sent."""
        job, _ = await self._ended_job(repo, clock, callback_url="https://hooks.example.com/done")
        assert await repo.pending_deliveries() != {}
        await repo.delete_job(job.id)
        assert await repo.pending_deliveries() == {}
        assert await repo.acquire_delivery(acquisition_id="lease-d", lease=LEASE) is None

    async def test_a_deleted_jobs_dedup_key_is_free_again(
        self, repo: JobRepository, clock: ManualClock
    ) -> None:
        """After a delete the same Idempotency-Key makes a new job: the old one is gone."""
        [job] = await stored(clock, repo, make_job(dedup_key="http::key"))
        await repo.delete_job(job.id)
        assert await repo.find_by_dedup_key("http::key") is None
        fresh = make_job(dedup_key="http::key")
        assert await create(clock, repo, fresh) == (fresh, True)

    # -- sweep lease -------------------------------------------------------------

    async def test_a_sweep_is_taken_once_until_its_lease_passes(
        self, repo: JobRepository, clock: ManualClock
    ) -> None:
        """take_sweep: True for the first caller, False while held, True again at its expiry."""
        lease = timedelta(minutes=30)
        assert await repo.take_sweep("retention", lease=lease) is True
        assert await repo.take_sweep("retention", lease=lease) is False
        assert await repo.take_sweep("other", lease=lease) is True
        clock.advance(lease - timedelta(microseconds=1))
        assert await repo.take_sweep("retention", lease=lease) is False
        clock.advance(timedelta(microseconds=1))
        assert await repo.take_sweep("retention", lease=lease) is True
        assert await repo.take_sweep("retention", lease=lease) is False

    async def test_concurrent_sweep_takers_have_one_winner(
        self, repo: JobRepository, another_repo: OpenAnother
    ) -> None:
        """Of many takers asking at once, on four instances, exactly one gets the sweep."""
        takers = [repo, *[await another_repo() for _ in range(3)]]
        won = await asyncio.gather(
            *(
                taker.take_sweep("retention", lease=timedelta(hours=1))
                for taker in takers
                for _ in range(2)
            )
        )
        assert sorted(won) == [False] * 7 + [True]

    # -- retention ---------------------------------------------------------------

    async def test_files_go_at_their_age_and_not_before(
        self, repo: JobRepository, clock: ManualClock
    ) -> None:
        """Ended FILES_AGE ago: the files and references go, the job and transcript stay."""
        job, files = await self._ended_job(repo, clock, parts=True)
        [running] = await stored(clock, repo, make_job(created=clock.now()))
        clock.advance(FILES_AGE - timedelta(microseconds=1))
        assert await repo.remove_ended_files(age=FILES_AGE, limit=10) == Removed()
        clock.advance(timedelta(microseconds=1))
        removed = await repo.remove_ended_files(age=FILES_AGE, limit=10)
        assert removed.jobs == (job.id,)
        assert sorted(removed.files, key=lambda f: f.id) == sorted(files, key=lambda f: f.id)
        kept = await repo.get(job.id)
        assert kept.text == "done"
        assert kept.file_ids() == ()
        assert kept.ended == job.ended
        assert [(p.file_id, p.storage_file_id) for p in await repo.get_parts(job.id)] == [
            (None, None),
            (None, None),
        ]
        assert (await repo.get(running.id)).source_file_id == running.source_file_id
        assert await repo.remove_ended_files(age=FILES_AGE, limit=10) == Removed()

    async def test_jobs_go_at_their_age_and_not_before(
        self, repo: JobRepository, clock: ManualClock
    ) -> None:
        """Ended JOBS_AGE ago: the job goes with its parts and any file records left."""
        job, files = await self._ended_job(repo, clock, parts=True)
        clock.advance(JOBS_AGE - timedelta(microseconds=1))
        assert await repo.remove_ended_jobs(age=JOBS_AGE, limit=10) == Removed()
        assert await repo.get(job.id) == job
        clock.advance(timedelta(microseconds=1))
        removed = await repo.remove_ended_jobs(age=JOBS_AGE, limit=10)
        assert removed.jobs == (job.id,)
        assert len(removed.files) == len(files)
        with pytest.raises(JobNotFound):
            await repo.get(job.id)
        assert await repo.get_parts(job.id) == []

    async def test_sweeps_go_oldest_ended_first_in_batches(
        self, repo: JobRepository, clock: ManualClock
    ) -> None:
        """A batch takes at most ``limit`` jobs, longest ended first; the next takes the rest."""
        ended = []
        for _ in range(5):
            job, _ = await self._ended_job(repo, clock)
            ended.append(job.id)
            clock.advance(timedelta(minutes=1))
        clock.advance(JOBS_AGE)
        first = await repo.remove_ended_jobs(age=JOBS_AGE, limit=2)
        second = await repo.remove_ended_jobs(age=JOBS_AGE, limit=2)
        third = await repo.remove_ended_jobs(age=JOBS_AGE, limit=2)
        assert first.jobs + second.jobs + third.jobs == tuple(ended)
        assert len(third.jobs) == 1

    @pytest.mark.parametrize(
        ("sweep", "age"), [("remove_ended_jobs", JOBS_AGE), ("remove_ended_files", FILES_AGE)]
    )
    async def test_concurrent_sweeps_remove_each_thing_once(
        self,
        repo: JobRepository,
        clock: ManualClock,
        another_repo: OpenAnother,
        sweep: str,
        age: timedelta,
    ) -> None:
        """Job or file sweeps at once on three instances hand each job and file to exactly one."""
        files: list[str] = []
        for _ in range(12):
            _, made = await self._ended_job(repo, clock, parts=True)
            files.extend(record.id for record in made)
        clock.advance(age)
        sweepers = [repo, await another_repo(), await another_repo()]
        results: list[Removed] = await asyncio.gather(
            *(getattr(sweeper, sweep)(age=age, limit=3) for sweeper in sweepers for _ in range(2))
        )
        swept = [record.id for result in results for record in result.files]
        assert sorted(swept) == sorted(files)
        jobs = [job_id for result in results for job_id in result.jobs]
        assert len(jobs) == len(set(jobs)) == 12

    async def test_a_revived_job_is_not_swept(
        self, repo: JobRepository, clock: ManualClock
    ) -> None:
        """A job sent back to a step has no end time: retention leaves it alone."""
        job, _ = await self._ended_job(repo, clock)
        revived = transition(job, State.CONVERT, now=clock.now(), actor=Actor.OWNER)
        assert revived.ended is None
        await repo.save_if_unchanged(revived, seen=job)
        clock.advance(JOBS_AGE)
        assert await repo.remove_ended_files(age=FILES_AGE, limit=10) == Removed()
        assert await repo.remove_ended_jobs(age=JOBS_AGE, limit=10) == Removed()
