"""The owner's rules in the core: where a revived job starts, which missing file is expected."""

from __future__ import annotations

import attrs
import pytest

from transcriber_contracts.job_repository import make_job
from transcriber_core import edits
from transcriber_core.copies import STORAGE_COPY
from transcriber_core.entities import STEP_STATES, TERMINAL_STATES, State
from transcriber_core.naming import derived_file_id


@pytest.mark.parametrize("state", [State.DEAD, State.FAILED])
def test_revive_restarts_at_the_first_missing_result(state: State) -> None:
    """A revived job keeps the recognizer's operation or the converted audio it already has."""
    job = make_job(state=state)
    assert edits.revive_state(job) is State.CONVERT
    assert edits.revive_state(attrs.evolve(job, converted_file_id="c")) is State.RECOGNIZE
    with_operation = attrs.evolve(job, converted_file_id="c", operation_id="o")
    assert edits.revive_state(with_operation) is State.CHECK
    link = attrs.evolve(job, source_url="https://example.org/a.mp3")
    assert edits.revive_state(link) is State.CONVERT
    assert edits.revive_state(attrs.evolve(link, source_file_id=None)) is State.FETCH


@pytest.mark.parametrize("state", [*STEP_STATES, State.DONE])
def test_only_jobs_that_ended_without_a_transcript_are_revived(state: State) -> None:
    """A running or finished job offers no revive, whatever results it holds."""
    job = make_job(state=state, converted_file_id="c", operation_id="o")
    assert edits.revive_state(job) is None


@pytest.mark.parametrize("state", sorted(TERMINAL_STATES))
def test_an_ended_jobs_storage_copy_is_missing_on_purpose(state: State) -> None:
    """The Object Storage copy the pipeline deletes when a job ends is not a dangling reference."""
    job = make_job(state=state)
    copy = derived_file_id(job.id, STORAGE_COPY)
    assert edits.removed_on_purpose(attrs.evolve(job, storage_file_id=copy), copy)


@pytest.mark.parametrize("state", sorted(STEP_STATES))
def test_a_running_jobs_missing_copy_is_a_dangling_reference(state: State) -> None:
    """While the job runs its copy must exist: a missing one is a real problem."""
    job = make_job(state=state)
    copy = derived_file_id(job.id, STORAGE_COPY)
    assert not edits.removed_on_purpose(attrs.evolve(job, storage_file_id=copy), copy)


def test_other_missing_files_of_an_ended_job_are_dangling_references() -> None:
    """The source, the converted audio, or a copy id the pipeline never made are real problems."""
    job = make_job(state=State.DONE, converted_file_id="converted-1")
    copy = derived_file_id(job.id, STORAGE_COPY)
    done = attrs.evolve(job, storage_file_id=copy)
    assert job.source_file_id is not None
    assert not edits.removed_on_purpose(done, job.source_file_id)
    assert not edits.removed_on_purpose(done, "converted-1")
    by_hand = attrs.evolve(job, storage_file_id="made-by-hand")
    assert not edits.removed_on_purpose(by_hand, "made-by-hand")
