"""The ``Corrections`` role: a person's correction of a done transcript, compare-and-set (ADR 57).

Subclass with the fixtures ``repo`` and ``open_elsewhere`` (``parts``'s
docstring): the race runs real threads, each with its own loop and instance.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta

import attrs
import pytest

from transcriber_contracts.parts import ElsewhereOpener, race_in_threads
from transcriber_contracts.repository_support import (
    NOW,
    RepositorySuite,
    create,
    make_job,
    new_id,
)
from transcriber_core.clocks import ManualClock
from transcriber_core.entities import Correction, Job, Speaker, State, Word
from transcriber_core.errors import JobChanged, JobNotFound
from transcriber_core.ports import JobRepository

#: The recognizer's words of the suite's done job.
HEARD = (
    Word(text="helo", start=0.5, end=0.9, speaker="S1"),
    Word(text="wörld", start=1.000001, end=1.75, speaker="S1"),
)
#: A person's correction of them.
FIXED = (
    Word(text="Hello", start=0.5, end=0.9, speaker="S1"),
    Word(text="world!", start=1.000001, end=1.75, speaker="S1"),
)


def first_correction(text: str = "Hello world!") -> Correction:
    """The suite's job corrected once: the recognizer's transcript kept as the original."""
    return Correction(text=text, words=FIXED, original_text="helo wörld", original_words=HEARD)


async def done_job(clock: ManualClock, repo: JobRepository) -> Job:
    """A done job with the recognizer's words and a labelled speaker, as the pipeline ends it."""
    job = make_job(
        state=State.DONE,
        text="helo wörld",
        words=HEARD,
        speakers=(Speaker(id="S1", name="Speaker 1"),),
        ended=NOW,
        # A created job starts uncorrected whatever it was handed.
        edit_version=7,
        original_text="x",
        original_words=(),
    )
    created, _ = await create(clock, repo, job)
    return created


class CorrectionsContract(RepositorySuite):
    """Subclass and provide ``repo`` and ``open_elsewhere``."""

    async def test_a_new_job_is_uncorrected_at_version_zero(
        self, clock: ManualClock, repo: JobRepository
    ) -> None:
        """``create`` stores no original and version 0, whatever the job it is handed holds."""
        job = await done_job(clock, repo)
        stored = await repo.get(job.id)
        assert (stored.edit_version, stored.original_text, stored.original_words) == (0, None, None)
        assert not stored.corrected

    async def test_a_correction_replaces_the_transcript_and_keeps_the_original(
        self, clock: ManualClock, repo: JobRepository
    ) -> None:
        """Text and words are the correction's, the originals kept, the version one more."""
        job = await done_job(clock, repo)
        clock.set(NOW + timedelta(minutes=5))
        saved = await repo.save_correction(job.id, first_correction(), version=0)
        assert saved == await repo.get(job.id)  # the answer is what is stored
        assert (saved.text, saved.words) == ("Hello world!", FIXED)
        assert (saved.original_text, saved.original_words) == ("helo wörld", HEARD)
        assert saved.edit_version == 1
        assert saved.updated == NOW + timedelta(minutes=5)
        unchanged = attrs.evolve(
            saved,
            text=job.text,
            words=job.words,
            original_text=None,
            original_words=None,
            edit_version=0,
            updated=job.updated,
        )
        assert attrs.asdict(unchanged) == attrs.asdict(job)  # nothing else changed

    async def test_a_stale_version_is_refused_and_writes_nothing(
        self, clock: ManualClock, repo: JobRepository
    ) -> None:
        """A correction from a version someone has saved over is ``JobChanged``; the first stays."""
        job = await done_job(clock, repo)
        await repo.save_correction(job.id, first_correction(), version=0)
        before = await repo.get(job.id)
        with pytest.raises(JobChanged):
            await repo.save_correction(job.id, first_correction("Other words"), version=0)
        with pytest.raises(JobChanged):
            await repo.save_correction(job.id, first_correction("Other words"), version=2)
        assert await repo.get(job.id) == before

    async def test_a_job_not_done_is_not_corrected(
        self, clock: ManualClock, repo: JobRepository
    ) -> None:
        """Only a done job takes a correction; another state is ``JobChanged``."""
        job = make_job(state=State.CHECK)
        await create(clock, repo, job)
        with pytest.raises(JobChanged):
            await repo.save_correction(job.id, first_correction(), version=0)
        assert (await repo.get(job.id)).text is None

    async def test_a_correction_of_a_job_that_is_gone_is_job_not_found(
        self, repo: JobRepository
    ) -> None:
        """No job, no correction: ``JobNotFound``, and nothing is created."""
        missing = new_id()
        with pytest.raises(JobNotFound):
            await repo.save_correction(missing, first_correction(), version=0)
        with pytest.raises(JobNotFound):
            await repo.get(missing)

    async def test_a_restore_puts_the_original_back_and_forgets_it(
        self, clock: ManualClock, repo: JobRepository
    ) -> None:
        """Restoring is a correction to the original with no original left, version one more."""
        job = await done_job(clock, repo)
        await repo.save_correction(job.id, first_correction(), version=0)
        back = await repo.save_correction(
            job.id, Correction(text="helo wörld", words=HEARD), version=1
        )
        assert (back.text, back.words, back.original_text, back.original_words) == (
            "helo wörld",
            HEARD,
            None,
            None,
        )
        assert back.edit_version == 2
        assert await repo.get(job.id) == back

    async def test_no_other_save_writes_the_correction_fields(
        self, clock: ManualClock, repo: JobRepository
    ) -> None:
        """An owner's edit (a rename) keeps the version and the original as the store has them."""
        job = await done_job(clock, repo)
        corrected = await repo.save_correction(job.id, first_correction(), version=0)
        renamed = attrs.evolve(
            corrected,
            speakers=(Speaker(id="S1", name="Diane"),),
            edit_version=0,
            original_text=None,
            original_words=None,
        )
        await repo.save_if_unchanged(renamed, seen=corrected)
        stored = await repo.get(job.id)
        assert stored.speakers == (Speaker(id="S1", name="Diane"),)
        assert (stored.edit_version, stored.original_text, stored.original_words) == (
            1,
            "helo wörld",
            HEARD,
        )

    @pytest.mark.parametrize("writers", [2, 8])
    def test_racing_corrections_in_threads_have_one_winner(
        self,
        clock: ManualClock,
        repo: JobRepository,
        open_elsewhere: ElsewhereOpener,
        writers: int,
    ) -> None:
        """Writers in real threads correcting one version: exactly one saves, the rest conflict."""

        async def prepare() -> str:
            async with open_elsewhere() as elsewhere:
                return (await done_job(clock, elsewhere)).id

        job_id = asyncio.run(prepare())

        async def write(instance: JobRepository, n: int) -> str | None:
            try:
                saved = await instance.save_correction(
                    job_id, first_correction(f"writer {n}"), version=0
                )
            except JobChanged:
                return None
            return saved.text

        results = race_in_threads(open_elsewhere, writers, write)
        winners = [text for text in results if text is not None]
        assert len(winners) == 1, f"{len(winners)} writers saved from the same version"

        async def read() -> Job:
            async with open_elsewhere() as elsewhere:
                return await elsewhere.get(job_id)

        stored = asyncio.run(read())
        assert (stored.text, stored.edit_version) == (winners[0], 1)
