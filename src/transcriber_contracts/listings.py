"""The ``Listings`` role: jobs newest first and counts by state, for the admin pages.

Subclass with the fixtures ``repo`` and ``another_repo`` (``job_repository``'s docstring).
"""

from __future__ import annotations

from datetime import timedelta

from transcriber_contracts.repository_support import (
    LEASE,
    NOW,
    T0,
    RepositorySuite,
    acquire,
    make_job,
    new_id,
    stored,
)
from transcriber_core.clocks import ManualClock
from transcriber_core.entities import (
    SUMMARY_PREVIEW_CHARS,
    JobPart,
    JobSummary,
    State,
)
from transcriber_core.ports import JobRepository

#: Owner keys of three people, as the workspace stores them (64 characters, ADR 55).
PERSON_A, PERSON_B, PERSON_C = (f"person:{letter * 57}" for letter in "abc")


class ListingsContract(RepositorySuite):
    """Subclass and provide the fixtures ``repo`` and ``another_repo``."""

    # -- list_jobs and count_by_state ------------------------------------------

    async def test_list_jobs_newest_first(self, clock: ManualClock, repo: JobRepository) -> None:
        """The admin list shows the newest job first, ties broken by id descending."""
        # Ids sort against creation (oldest "c-", newest "0-"): an order by id alone fails.
        old = make_job(id=new_id("c-"), created=T0)
        tie_a = make_job(id=new_id("a-"), created=T0 + timedelta(seconds=1))
        tie_b = make_job(id=new_id("b-"), created=T0 + timedelta(seconds=1))
        new = make_job(id=new_id("0-"), created=T0 + timedelta(seconds=2))
        await stored(clock, repo, tie_a, old, new, tie_b)
        listed = await repo.list_jobs()
        assert [job.id for job in listed] == [new.id, tie_b.id, tie_a.id, old.id]

    async def test_list_jobs_filters_by_state(
        self, clock: ManualClock, repo: JobRepository
    ) -> None:
        """A state filter lists only that state's jobs, still newest first."""
        dead_old = make_job(id=new_id("b-"), state=State.DEAD, created=T0)
        dead_new = make_job(id=new_id("a-"), state=State.DEAD, created=T0 + timedelta(seconds=1))
        await stored(clock, repo, dead_old, make_job(), dead_new)
        listed = await repo.list_jobs(state=State.DEAD)
        assert [job.id for job in listed] == [dead_new.id, dead_old.id]
        assert await repo.list_jobs(state=State.FAILED) == []

    async def test_list_owned_jobs_lists_only_that_owner(
        self, clock: ManualClock, repo: JobRepository
    ) -> None:
        """A person's list holds their jobs newest first and nobody else's, paged."""
        mine = [
            make_job(id=new_id(f"{9 - n}-"), owner=PERSON_A, created=T0 + timedelta(seconds=n))
            for n in range(3)
        ]
        theirs = make_job(owner=PERSON_B, created=T0 + timedelta(seconds=5))
        await stored(clock, repo, theirs, make_job(), *mine)
        listed = await repo.list_owned_jobs(PERSON_A)
        assert [job.id for job in listed] == [job.id for job in reversed(mine)]
        assert [job.id for job in await repo.list_owned_jobs(PERSON_A, limit=1, offset=1)] == [
            mine[1].id
        ]
        assert [job.id for job in await repo.list_owned_jobs(PERSON_B)] == [theirs.id]
        assert await repo.list_owned_jobs(PERSON_C) == []

    # -- list_owned_summaries: the workspace's live list ------------------------------

    async def test_summaries_list_the_owners_page_as_list_owned_jobs(
        self, clock: ManualClock, repo: JobRepository
    ) -> None:
        """The live list holds the same jobs in the same order, paged; nobody else's."""
        mine = [
            make_job(id=new_id(f"{9 - n}-"), owner=PERSON_A, created=T0 + timedelta(seconds=n))
            for n in range(3)
        ]
        await stored(clock, repo, make_job(owner=PERSON_B), make_job(), *mine)
        clock.set(NOW)
        summaries = await repo.list_owned_summaries(PERSON_A, lease=LEASE)
        assert [s.id for s in summaries] == [job.id for job in reversed(mine)]
        paged = await repo.list_owned_summaries(PERSON_A, lease=LEASE, limit=1, offset=1)
        assert [s.id for s in paged] == [mine[1].id]
        assert await repo.list_owned_summaries(PERSON_C, lease=LEASE) == []

    async def test_summaries_agree_with_the_job_its_queue_and_its_parts(
        self, clock: ManualClock, repo: JobRepository
    ) -> None:
        """Queue position, parts done of all, preview, error and progress as the other reads say."""
        long_text = "word " * 100
        done = make_job(owner=PERSON_A, state=State.DONE, text=long_text, duration=61.5, created=T0)
        failed = make_job(owner=PERSON_A, state=State.FAILED, error="no speech", created=T0)
        ahead = make_job(state=State.CONVERT, created=T0)
        waiting = make_job(owner=PERSON_A, state=State.CONVERT, created=T0 + timedelta(seconds=1))
        split = make_job(owner=PERSON_A, state=State.RECOGNIZE, duration=30.0, created=T0)
        await stored(clock, repo, done, failed, ahead, waiting, split)
        leased = await acquire(clock, repo, State.RECOGNIZE, acquisition_id="plan")
        assert leased is not None
        assert leased.id == split.id
        parts = [
            JobPart(job_id=split.id, index=n, start=10.0 * n, end=10.0 * (n + 1)) for n in range(3)
        ]
        parts[0] = JobPart(job_id=split.id, index=0, start=0.0, end=10.0, text="first")
        await repo.save_parts_if_held(split.id, parts, acquisition_id="plan")
        await repo.save_progress_if_held(split.id, 10.0, acquisition_id="plan")
        clock.set(NOW)
        by_id = {s.id: s for s in await repo.list_owned_summaries(PERSON_A, lease=LEASE)}
        assert set(by_id) == {done.id, failed.id, waiting.id, split.id}

        assert by_id[waiting.id].queue_position == 1
        assert by_id[waiting.id].queue_position == await repo.queue_position(
            waiting.id, lease=LEASE
        )
        assert (by_id[waiting.id].parts_done, by_id[waiting.id].parts_total) == (0, 0)

        running = by_id[split.id]
        assert running.queue_position is None  # leased: it is running, not waiting
        assert (running.parts_done, running.parts_total) == (1, 3)
        assert running.progress is not None
        assert running.progress.seconds_done == 10.0
        assert running.progress == (await repo.get(split.id)).progress

        assert by_id[done.id] == JobSummary(
            id=done.id,
            state=State.DONE,
            created=T0,
            updated=T0,
            duration=61.5,
            preview=long_text[:SUMMARY_PREVIEW_CHARS],
        )
        assert by_id[failed.id].error == "no speech"
        assert by_id[failed.id].preview is None
        assert by_id[failed.id].queue_position is None

    async def test_list_jobs_pages_with_limit_and_offset(
        self, clock: ManualClock, repo: JobRepository
    ) -> None:
        """Pages are contiguous and do not overlap."""
        # Later jobs get ids that sort earlier, so only the created order passes.
        jobs = [
            make_job(id=new_id(f"{9 - n}-"), created=T0 + timedelta(seconds=n)) for n in range(5)
        ]
        await stored(clock, repo, *jobs)
        newest_first = [job.id for job in reversed(jobs)]
        first = await repo.list_jobs(limit=2)
        second = await repo.list_jobs(limit=2, offset=2)
        last = await repo.list_jobs(limit=2, offset=4)
        assert [job.id for job in first + second + last] == newest_first
        assert await repo.list_jobs(limit=2, offset=5) == []

    async def test_count_by_state(self, clock: ManualClock, repo: JobRepository) -> None:
        """Counts per state, leaving out states without jobs."""
        await stored(
            clock,
            repo,
            make_job(),
            make_job(),
            make_job(state=State.CHECK),
            make_job(state=State.FAILED),
        )
        assert await repo.count_by_state() == {
            State.CONVERT: 2,
            State.CHECK: 1,
            State.FAILED: 1,
        }

    async def test_count_by_state_of_an_empty_repository(self, repo: JobRepository) -> None:
        """An empty repository counts nothing, not zeros."""
        assert await repo.count_by_state() == {}
