"""What a transcript request says of a job that has none: not yet, failed or dead, and why."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from transcriber_app.web.transcripts import no_transcript
from transcriber_core.entities import Job, Origin, State

T0 = datetime(2026, 12, 1, tzinfo=UTC)


def job(state: State, error: str | None = None) -> Job:
    """A job from HTTP in ``state`` with ``error``."""
    return Job(id="j1", state=state, origin=Origin.http(), created=T0, updated=T0, error=error)


@pytest.mark.parametrize("state", [State.CONVERT, State.RECOGNIZE, State.CHECK])
def test_a_job_on_its_way_is_not_done_and_its_retried_error_is_not_shown(state: State) -> None:
    """Still working: ``not_done``, and a retry's error (ours to fix) is not put in the message."""
    code, sentence = no_transcript(job(state, error="the disk is full"))
    assert code == "not_done"
    assert "disk" not in sentence


def test_a_failed_job_names_its_reason() -> None:
    """Failed: ``failed`` with the job's error, which the status shows the sender too."""
    assert no_transcript(job(State.FAILED, "the file has no audio")) == (
        "failed",
        "the job failed and has no transcript: the file has no audio",
    )


def test_a_dead_job_says_it_gave_up_and_why() -> None:
    """Dead: ``dead`` with the last error."""
    code, sentence = no_transcript(job(State.DEAD, "the recognizer did not answer"))
    assert code == "dead"
    assert sentence.endswith("has no transcript: the recognizer did not answer")
