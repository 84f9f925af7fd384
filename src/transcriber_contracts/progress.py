"""The ``JobQueue``'s progress notes (ADR 51): fenced, stamped by the store, kept while recognising.

Part of ``JobRepositoryContract``; subclass with the fixture ``repo``
(``job_repository``'s docstring).
"""

from __future__ import annotations

from datetime import timedelta

import attrs
import pytest

from transcriber_contracts.repository_support import (
    NOW,
    RepositorySuite,
    acquire,
    create,
    make_job,
)
from transcriber_core.clocks import ManualClock
from transcriber_core.entities import Job, Progress, State
from transcriber_core.errors import LeaseLost
from transcriber_core.ports import JobRepository
from transcriber_core.transitions import transition


async def _recognising(clock: ManualClock, repo: JobRepository, lease: str = "lease-1") -> Job:
    """A job leased in ``recognize`` by ``lease``, 100 seconds long."""
    await create(clock, repo, make_job(state=State.RECOGNIZE, duration=100.0))
    leased = await acquire(clock, repo, State.RECOGNIZE, acquisition_id=lease)
    assert leased is not None
    return leased


class ProgressContract(RepositorySuite):
    """Subclass and provide the fixture ``repo``."""

    async def test_a_note_writes_only_the_progress(
        self, clock: ManualClock, repo: JobRepository
    ) -> None:
        """The holder's note stamps both times with the store's clock; nothing else moves."""
        leased = await _recognising(clock, repo)
        clock.set(NOW + timedelta(seconds=2))
        await repo.save_progress_if_held(leased.id, 12.5, acquisition_id="lease-1")
        at = NOW + timedelta(seconds=2)
        expected = Progress(seconds_done=12.5, started=at, updated=at)
        assert await repo.get(leased.id) == attrs.evolve(leased, progress=expected)

    async def test_later_notes_keep_the_start(
        self, clock: ManualClock, repo: JobRepository
    ) -> None:
        """A later note moves seconds and updated but keeps started; ``begun`` starts over."""
        leased = await _recognising(clock, repo)
        await repo.save_progress_if_held(
            leased.id, 1.0, acquisition_id="lease-1", begun=timedelta(0)
        )
        clock.set(NOW + timedelta(seconds=30, microseconds=7))
        await repo.save_progress_if_held(leased.id, 40.0, acquisition_id="lease-1")
        progress = (await repo.get(leased.id)).progress
        assert progress == Progress(
            seconds_done=40.0, started=NOW, updated=NOW + timedelta(seconds=30, microseconds=7)
        )
        clock.set(NOW + timedelta(minutes=1))
        await repo.save_progress_if_held(
            leased.id, 0.5, acquisition_id="lease-1", begun=timedelta(seconds=4, microseconds=3)
        )
        again = NOW + timedelta(minutes=1)
        # Begun 4 s before the note: the store's own now less that duration.
        assert (await repo.get(leased.id)).progress == Progress(
            seconds_done=0.5, started=again - timedelta(seconds=4, microseconds=3), updated=again
        )

    async def test_a_note_is_fenced_by_the_lease(
        self, clock: ManualClock, repo: JobRepository
    ) -> None:
        """Another lease, no lease or no job is ``LeaseLost``, and nothing is written."""
        leased = await _recognising(clock, repo)
        with pytest.raises(LeaseLost):
            await repo.save_progress_if_held(leased.id, 5.0, acquisition_id="lease-2")
        assert (await repo.get(leased.id)).progress is None
        with pytest.raises(LeaseLost):
            await repo.save_progress_if_held("no-such-job", 5.0, acquisition_id="lease-1")
        await repo.save_if_held(
            transition(leased, State.RECOGNIZE, now=NOW), acquisition_id="lease-1"
        )
        with pytest.raises(LeaseLost):
            await repo.save_progress_if_held(leased.id, 5.0, acquisition_id="lease-1")
        assert (await repo.get(leased.id)).progress is None

    async def test_negative_seconds_are_refused(
        self, clock: ManualClock, repo: JobRepository
    ) -> None:
        """A negative count of seconds is a caller's bug: ``ValueError``, nothing written."""
        leased = await _recognising(clock, repo)
        with pytest.raises(ValueError, match="negative"):
            await repo.save_progress_if_held(leased.id, -1.0, acquisition_id="lease-1")
        assert (await repo.get(leased.id)).progress is None

    async def test_a_save_keeps_progress_while_recognising(
        self, clock: ManualClock, repo: JobRepository
    ) -> None:
        """The step's save (which never carries progress) keeps it into check, clears it at done."""
        leased = await _recognising(clock, repo)
        await repo.save_progress_if_held(leased.id, 20.0, acquisition_id="lease-1")
        noted = (await repo.get(leased.id)).progress
        assert noted is not None
        await repo.save_if_held(
            transition(leased, State.CHECK, now=NOW, operation_id="op-1"),
            acquisition_id="lease-1",
        )
        assert (await repo.get(leased.id)).progress == noted
        checking = await acquire(
            clock, repo, State.CHECK, now=NOW + timedelta(seconds=1), acquisition_id="lease-2"
        )
        assert checking is not None
        assert checking.progress == noted
        await repo.save_if_held(
            transition(checking, State.DONE, now=NOW, text="hello"), acquisition_id="lease-2"
        )
        assert (await repo.get(leased.id)).progress is None

    async def test_create_stores_no_progress(self, clock: ManualClock, repo: JobRepository) -> None:
        """A new job has no progress, whatever the caller's job said."""
        progress = Progress(seconds_done=3.0, started=NOW, updated=NOW)
        made, _ = await create(clock, repo, make_job(progress=progress))
        assert made.progress is None
        assert (await repo.get(made.id)).progress is None
