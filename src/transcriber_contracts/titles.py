"""The ``Jobs.save_title`` role and the title a job is created with (SPEC §26, ADR 79).

Subclass with the fixture ``repo`` (``job_repository``'s docstring).
"""

from __future__ import annotations

from datetime import timedelta

import attrs
import pytest

from transcriber_contracts.repository_support import (
    LEASE,
    NOW,
    RepositorySuite,
    acquire,
    create,
    make_job,
    new_id,
)
from transcriber_core.clocks import ManualClock
from transcriber_core.entities import State
from transcriber_core.errors import JobNotFound
from transcriber_core.ports import JobRepository

#: A person's title with what a title may hold: any script, punctuation, an emoji.
TITLE = "Встреча «Диана» — notes 😀"
#: A person's owner key, as the workspace stores it.
OWNER = f"person:{'t' * 57}"


class TitlesContract(RepositorySuite):
    """Subclass and provide ``repo``."""

    async def test_a_job_is_created_with_its_title_and_lists_with_it(
        self, clock: ManualClock, repo: JobRepository
    ) -> None:
        """``create`` stores the title as given; ``get`` and the live list give it back."""
        titled, _ = await create(clock, repo, make_job(title=TITLE, owner=OWNER))
        untitled, _ = await create(clock, repo, make_job(owner=OWNER))
        assert (await repo.get(titled.id)).title == TITLE
        assert (await repo.get(untitled.id)).title is None
        summaries = await repo.list_owned_summaries(OWNER, lease=LEASE)
        assert {s.id: s.title for s in summaries} == {titled.id: TITLE, untitled.id: None}

    async def test_save_title_writes_the_title_and_nothing_else(
        self, clock: ManualClock, repo: JobRepository
    ) -> None:
        """The title and ``updated`` change, every other field stays; None takes the title away."""
        job, _ = await create(clock, repo, make_job(title="first"))
        clock.set(NOW + timedelta(minutes=3))
        saved = await repo.save_title(job.id, TITLE)
        assert saved == await repo.get(job.id)  # the answer is what is stored
        assert (saved.title, saved.updated) == (TITLE, NOW + timedelta(minutes=3))
        assert attrs.evolve(saved, title="first", updated=job.updated) == job
        assert (await repo.save_title(job.id, None)).title is None

    async def test_a_title_is_saved_whatever_the_state_and_lease(
        self, clock: ManualClock, repo: JobRepository
    ) -> None:
        """A leased job is renamed, and the step's later save, which never saw it, keeps it."""
        job, _ = await create(clock, repo, make_job())
        held = await acquire(clock, repo, acquisition_id="lease-1")
        assert held is not None
        assert held.id == job.id
        await repo.save_title(job.id, TITLE)
        moved = attrs.evolve(held, state=State.RECOGNIZE, acquisition_id=None)
        await repo.save_if_held(moved, acquisition_id="lease-1")
        stored = await repo.get(job.id)
        assert (stored.state, stored.title) == (State.RECOGNIZE, TITLE)

    async def test_the_title_of_a_job_that_is_gone_is_job_not_found(
        self, repo: JobRepository
    ) -> None:
        """No job, no title: ``JobNotFound``, and nothing is created."""
        missing = new_id()
        with pytest.raises(JobNotFound):
            await repo.save_title(missing, TITLE)
        with pytest.raises(JobNotFound):
            await repo.get(missing)
