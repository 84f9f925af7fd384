"""Jobs that came in as links (SPEC §28, ADR 85): the ``fetch`` state in the job store.

Part of ``JobRepositoryContract``; subclass with the fixture ``repo``
(``job_repository``'s docstring). A link's job is made in ``fetch`` with
its ``source_url`` and no file; it is leased, renewed, retried and saved
like any step's job; its progress counts bytes towards an optional total
and is cleared when it moves on to ``convert``.
"""

from __future__ import annotations

from datetime import timedelta

import pytest

from transcriber_contracts.repository_support import (
    LEASE,
    NOW,
    T0,
    RepositorySuite,
    acquire,
    create,
    make_file,
    make_job,
    renew,
)
from transcriber_core.clocks import ManualClock
from transcriber_core.entities import Job, Progress, State
from transcriber_core.errors import LeaseLost
from transcriber_core.ports import JobRepository
from transcriber_core.transitions import transition

#: The owner of the suite's listed link: a person's key.
PERSON = f"person:{'p' * 57}"
#: A link as a sender pastes it, a signed share's secret in its query.
LINK = "https://media.example.org/talks/42.mp3?signature=s3cr3t"


def make_link_job(*, owner: str | None = None) -> Job:
    """A new job of ``LINK`` (``owner``'s), waiting in ``fetch`` with no file yet."""
    return make_job(state=State.FETCH, source_file_id=None, source_url=LINK, owner=owner)


async def _fetching(clock: ManualClock, repo: JobRepository, lease: str = "lease-1") -> Job:
    await create(clock, repo, make_link_job())
    leased = await acquire(clock, repo, State.FETCH, acquisition_id=lease)
    assert leased is not None
    return leased


class LinksContract(RepositorySuite):
    """Subclass and provide the fixture ``repo``."""

    async def test_a_link_job_keeps_its_link_and_waits_in_fetch(
        self, clock: ManualClock, repo: JobRepository
    ) -> None:
        """A job made in fetch keeps its link, has no file, and only the fetch loops see it."""
        job, is_new = await create(clock, repo, make_link_job())
        assert is_new
        stored = await repo.get(job.id)
        assert (stored.state, stored.source_url, stored.source_file_id) == (
            State.FETCH,
            LINK,
            None,
        )
        clock.set(NOW)
        assert State.FETCH in (await repo.ready_states(lease=LEASE)).states
        assert await acquire(clock, repo, State.CONVERT) is None
        leased = await acquire(clock, repo, State.FETCH, acquisition_id="lease-1")
        assert leased is not None
        assert (leased.id, leased.attempts, leased.source_url) == (job.id, 1, LINK)

    async def test_a_fetch_is_leased_once_and_renewed(
        self, clock: ManualClock, repo: JobRepository
    ) -> None:
        """A leased fetch is not handed out again while its holder renews it; then it is."""
        leased = await _fetching(clock, repo)
        assert await acquire(clock, repo, State.FETCH, now=NOW + LEASE / 2) is None
        await renew(clock, repo, leased.id, acquisition_id="lease-1", now=NOW + LEASE / 2)
        assert await acquire(clock, repo, State.FETCH, now=NOW + LEASE) is None
        again = await acquire(clock, repo, State.FETCH, now=NOW + LEASE + LEASE / 2)
        assert again is not None
        assert again.attempts == 2

    async def test_a_retried_fetch_waits_out_its_pause(
        self, clock: ManualClock, repo: JobRepository
    ) -> None:
        """A fetch that failed for a while stays in fetch with its reason, due after its delay."""
        leased = await _fetching(clock, repo)
        retry = transition(
            leased,
            State.FETCH,
            now=NOW,
            error="the link's server did not answer",
            delay_until=NOW + timedelta(seconds=4),
        )
        clock.set(NOW)
        await repo.save_if_held(retry, acquisition_id="lease-1", delay=timedelta(seconds=4))
        assert await acquire(clock, repo, State.FETCH, now=NOW + timedelta(seconds=3)) is None
        again = await acquire(clock, repo, State.FETCH, now=NOW + timedelta(seconds=4))
        assert again is not None
        assert (again.attempts, again.error, again.source_url) == (
            2,
            "the link's server did not answer",
            LINK,
        )

    async def test_fetch_progress_counts_bytes_towards_a_total(
        self, clock: ManualClock, repo: JobRepository
    ) -> None:
        """The holder's note keeps the bytes and the declared total; an unknown total is None."""
        leased = await _fetching(clock, repo)
        clock.set(NOW + timedelta(seconds=1))
        await repo.save_progress_if_held(
            leased.id, 65536.0, acquisition_id="lease-1", total=1_000_000.0
        )
        at = NOW + timedelta(seconds=1)
        assert (await repo.get(leased.id)).progress == Progress(
            seconds_done=65536.0, total=1_000_000.0, started=at, updated=at
        )
        clock.set(NOW + timedelta(seconds=5))
        await repo.save_progress_if_held(leased.id, 131072.0, acquisition_id="lease-1")
        progress = (await repo.get(leased.id)).progress
        assert progress is not None
        assert (progress.seconds_done, progress.total, progress.started) == (131072.0, None, at)

    async def test_a_note_without_the_lease_writes_nothing(
        self, clock: ManualClock, repo: JobRepository
    ) -> None:
        """A fetch whose lease passed on, or whose job was deleted, notes nothing: ``LeaseLost``."""
        leased = await _fetching(clock, repo)
        with pytest.raises(LeaseLost):
            await repo.save_progress_if_held(leased.id, 1.0, acquisition_id="lease-2", total=2.0)
        assert (await repo.get(leased.id)).progress is None
        await repo.delete_job(leased.id)
        with pytest.raises(LeaseLost):
            await repo.save_progress_if_held(leased.id, 1.0, acquisition_id="lease-1")

    async def test_fetched_the_job_goes_on_as_an_upload(
        self, clock: ManualClock, repo: JobRepository
    ) -> None:
        """Saved to convert with its file, the job loses its fetch progress and keeps its link."""
        leased = await _fetching(clock, repo)
        await repo.save_progress_if_held(leased.id, 10.0, acquisition_id="lease-1", total=10.0)
        fetched = make_file(created=NOW, size=10)
        await repo.put_file(fetched)
        moved = transition(leased, State.CONVERT, now=NOW, source_file_id=fetched.id)
        await repo.save_if_held(moved, acquisition_id="lease-1")
        stored = await repo.get(leased.id)
        assert (stored.state, stored.source_file_id, stored.progress, stored.source_url) == (
            State.CONVERT,
            fetched.id,
            None,
            LINK,
        )
        assert await repo.get_file(fetched.id) == fetched
        leased_again = await acquire(clock, repo, State.CONVERT, now=NOW + timedelta(seconds=1))
        assert leased_again is not None
        assert leased_again.id == leased.id

    async def test_a_refused_fetch_fails_with_its_code(
        self, clock: ManualClock, repo: JobRepository
    ) -> None:
        """A refused link ends the job failed with the refusal's code, progress cleared."""
        leased = await _fetching(clock, repo)
        await repo.save_progress_if_held(leased.id, 3.0, acquisition_id="lease-1")
        failed = transition(leased, State.FAILED, now=NOW, error="too_large")
        await repo.save_if_held(failed, acquisition_id="lease-1")
        stored = await repo.get(leased.id)
        assert (stored.state, stored.error, stored.progress) == (State.FAILED, "too_large", None)
        assert await repo.count_by_state() == {State.FAILED: 1}

    async def test_the_live_list_shows_the_fetch(
        self, clock: ManualClock, repo: JobRepository
    ) -> None:
        """A person's list reads a fetching job's bytes and total in its one query."""
        await create(clock, repo, make_link_job(owner=PERSON))
        leased = await acquire(clock, repo, State.FETCH, acquisition_id="lease-1")
        assert leased is not None
        await repo.save_progress_if_held(leased.id, 512.0, acquisition_id="lease-1", total=1024.0)
        [summary] = await repo.list_owned_summaries(PERSON, lease=LEASE)
        assert summary.state is State.FETCH
        assert summary.progress is not None
        assert (summary.progress.seconds_done, summary.progress.total) == (512.0, 1024.0)
        assert summary.created == T0
