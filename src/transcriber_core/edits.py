"""What the owner sees and changes by hand, with everything the pipeline would do around it.

Pure rules in the shape of ``transitions.py`` (where a revived job starts
again; which missing file a finished job is meant to miss) and the one edit
the panel makes, a state change, which goes through the transition function
and is saved only if the job is still what the owner read (ADR 23).
"""

from __future__ import annotations

from transcriber_core.copies import STORAGE_COPY
from transcriber_core.entities import Job, State
from transcriber_core.naming import derived_file_id
from transcriber_core.notices import remove_storage_copy
from transcriber_core.services import Services
from transcriber_core.transitions import Actor, transition

#: The states a job is revived from: it ended without a transcript.
REVIVABLE: frozenset[State] = frozenset({State.FAILED, State.DEAD})

#: The step that follows each result a job may keep, latest result first: a
#: revived job starts at the first step whose result it lacks.
_RESUME_AFTER: tuple[tuple[str, State], ...] = (
    ("operation_id", State.CHECK),
    ("converted_file_id", State.RECOGNIZE),
)


def revive_state(job: Job) -> State | None:
    """The step a revived ``job`` starts again from; None when the job is not revivable.

    Keeping the recognizer's operation or the converted audio spares a second
    recognition (which costs money) or a second conversion. A link's job
    whose recording was never stored fetches it again (ADR 85).
    """
    if job.state not in REVIVABLE:
        return None
    for field, state in _RESUME_AFTER:
        if getattr(job, field) is not None:
            return state
    if job.source_file_id is None and job.source_url is not None:
        return State.FETCH
    return State.CONVERT


def removed_on_purpose(job: Job, file_id: str) -> bool:
    """True when ``file_id`` is a copy the pipeline deletes once ``job`` has ended.

    The recognizer's Object Storage copy is removed when the job ends (and
    when the owner ends it), while the job keeps pointing at it: its absence
    is expected, not a dangling reference. Any other missing file is one.
    """
    return (
        job.state.is_terminal
        and file_id == job.storage_file_id
        and file_id == derived_file_id(job.id, STORAGE_COPY)
    )


async def change_state(services: Services, seen: Job, to: State) -> Job:
    """Move the job the owner read (``seen``) to ``to``: clear lease, delay and attempts, then act.

    The save happens only if the stored job is still ``seen``: a worker that
    saved a result in between (an operation id, a transcript) keeps it, and
    this raises ``JobChanged`` with nothing written. A step state wakes its
    workers at once; a terminal state removes the recognizer's Object
    Storage copy, as the pipeline does when a job ends. Raises
    ``JobNotFound`` when the job is gone.
    """
    changed = transition(seen, to, now=services.clock.now(), actor=Actor.OWNER)
    await services.jobs.save_if_unchanged(changed, seen=seen)
    if to.is_terminal:
        await remove_storage_copy(services, changed)
    else:
        services.wakeup.notify(to)
    return changed
