"""Waiting for a job: its state each time it changes, until it ends (a ``/v1`` answer, ADR 46).

The waiter takes the job's wake-up token before each read, so a change that
lands in between is never missed: ``Wakeup.job_changed`` sets it when this
process's worker ends the job or recognises a part of it, and the wake-up
feed when another process does (PostgreSQL ``NOTIFY``). Without either (a
worker in another process on SQLite, a lost notification) the job is read
again every ``fallback`` seconds: the poll is a safety net, not the way.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

from transcriber_core.entities import Job
from transcriber_core.services import Services


async def watch_job(
    services: Services, job_id: str, *, within: float, every: float | None = None
) -> AsyncIterator[Job]:
    """Yield the job now and after each change; the last is ended, or ``within`` s passed.

    With ``every``, also at least every ``every`` seconds (a stream's keep-alive).
    The job is read again at least every idle poll interval of the queue.
    Raises what ``repo.get`` raises (``JobNotFound`` once it is deleted).
    """
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    fallback = services.settings.idle_poll_interval.total_seconds()
    if every is not None:
        fallback = min(fallback, every)
    while True:
        token = services.wakeup.job_token(job_id)
        job = await services.jobs.get(job_id)
        yield job
        left = deadline - loop.time()
        if job.state.is_terminal or left <= 0:
            return
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(min(fallback, left)):
                await token.wait()
