"""Changes the owner makes by hand, with everything the pipeline would do around them."""

from __future__ import annotations

from transcriber_core.entities import Job, State
from transcriber_core.services import Services
from transcriber_core.transitions import Actor, transition
from transcriber_core.worker import remove_storage_copy


async def change_state(services: Services, job: Job, to: State) -> Job:
    """Move ``job`` to ``to`` as the owner: clear its lease, delay and attempts, then act on it.

    A step state wakes its workers at once; a terminal state removes the
    recognizer's Object Storage copy, as the pipeline does when a job ends.
    Raises ``JobNotFound`` when the job is gone.
    """
    changed = transition(job, to, now=services.clock.now(), actor=Actor.OWNER)
    await services.repo.save(changed)
    if to.is_terminal:
        await remove_storage_copy(services, changed)
    else:
        services.wakeup.notify(to)
    return changed
