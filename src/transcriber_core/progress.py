"""Recognition progress (ADR 51): noting it from a step, and what a reader is shown of it.

A recognizer that works within its ``start`` (Whisper) reports the seconds
of audio it has recognised through ``on_progress``; ``ProgressNotes`` turns
those calls into writes of the job's ``progress``, at most one every
``PROGRESS_INTERVAL`` and only when the percent moved, each fenced by the
job's lease (``JobQueue.save_progress_if_held``). A split recording notes
the seconds of its parts that are done. Progress lives in the database, so
any API process on any host reads the same; ``report_of`` is what they show.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from datetime import datetime, timedelta

import attrs

from transcriber_core.entities import PROGRESS_STATES, Job, NewDelivery, State
from transcriber_core.policy import percent_done, progress_due, time_left
from transcriber_core.services import Services

log = logging.getLogger("transcriber.progress")


@attrs.frozen(kw_only=True)
class ProgressReport:
    """How far a job's recognition has come, as ``/api/status``, the admin page and the bot say."""

    #: Whole percent of the audio recognised, 0 to 100.
    percent: int
    #: Seconds of the audio recognised so far.
    seconds_done: float
    #: Seconds of the whole audio (the job's duration).
    seconds_total: float
    #: Estimated seconds left as of ``updated``; None until enough is done to tell.
    eta_seconds: float | None
    #: When the progress was last noted (the store's clock).
    updated: datetime


@attrs.frozen(kw_only=True)
class FetchReport:
    """How far a link's download has come (SPEC §28): ``/api/status``'s ``fetch``, the pages'."""

    #: Bytes downloaded so far.
    bytes: int
    #: Bytes in all, when the site declares them; else None.
    total_bytes: int | None
    #: Whole percent of ``total_bytes`` downloaded, 0 to 100; None when the total is unknown.
    percent: int | None


def fetch_report_of(job: Job) -> FetchReport | None:
    """The download's progress for a job in ``fetch`` (0 bytes before the first note); else None."""
    if job.state is not State.FETCH:
        return None
    progress = job.progress
    done = 0 if progress is None else int(progress.seconds_done)
    total = None if progress is None or progress.total is None else int(progress.total)
    percent = None if total is None else percent_done(min(done, total), total)
    return FetchReport(bytes=done, total_bytes=total, percent=percent)


def report_of(job: Job) -> ProgressReport | None:
    """The progress to show for ``job``; None when it is not recognising or noted none."""
    progress = job.progress
    if progress is None or job.state not in PROGRESS_STATES or not job.duration:
        return None
    total = job.duration
    done = min(progress.seconds_done, total)
    left = time_left(progress, total)
    return ProgressReport(
        percent=percent_done(done, total),
        seconds_done=round(done, 3),
        seconds_total=round(total, 3),
        eta_seconds=None if left is None else round(left.total_seconds(), 1),
        updated=progress.updated,
    )


async def note_progress(
    services: Services,
    job: Job,
    seconds_done: float,
    *,
    begun: timedelta | None = None,
    total: float | None = None,
    deliveries: Sequence[NewDelivery] = (),
) -> None:
    """Write ``seconds_done`` as the job's progress under its lease; a failure is only logged.

    ``total`` is a fetch's declared bytes (ADR 85); a recognition sends none.

    ``deliveries`` (``outbox.deliveries_for(job, Event.PROGRESS)``: its chat's
    status message is edited) are written with the note.

    Progress is a courtesy: a lost lease shows at the step's own save, and a
    database that refuses a note must not fail a recognition that worked.
    """
    if job.acquisition_id is None:
        return
    try:
        await services.queue.save_progress_if_held(
            job.id,
            seconds_done,
            acquisition_id=job.acquisition_id,
            begun=begun,
            total=total,
            deliveries=deliveries,
        )
    except Exception as exc:  # noqa: BLE001 - a courtesy; see above
        log.info("progress.not_noted", extra={"job_id": job.id, "error_type": type(exc).__name__})


class ProgressNotes:
    """A recognizer's ``on_progress`` for one recognition: throttled, fenced notes (ADR 51).

    Made just before the recognizer starts; called on the event loop with the
    seconds recognised so far. The first call begins the recognition's
    progress as of when it was made (``begun``: the time since, a duration of
    this process's clock, so the store's ``started`` is its own now less it),
    later ones are written when ``progress_due`` says so, one write
    in flight at a time (a call meanwhile is dropped: the next one carries
    more), each with ``deliveries``. ``close`` waits for the write in flight.
    """

    def __init__(
        self, services: Services, job: Job, *, deliveries: Sequence[NewDelivery] = ()
    ) -> None:
        self._services = services
        self._job = job
        self._deliveries = tuple(deliveries)
        #: When the recognition began, by this process's clock: only a duration from it is sent.
        self._began = services.clock.now()
        self._total = job.duration or 0.0
        self._last_percent: int | None = None
        self._last_at: datetime | None = None
        self._writing: asyncio.Task[None] | None = None
        self._closed = False
        #: Notes written (or tried) so far; for tests.
        self.written = 0

    def __call__(self, seconds_done: float) -> None:
        """Note ``seconds_done`` if a note is due and none is being written."""
        if self._closed or (self._writing is not None and not self._writing.done()):
            return
        percent = percent_done(seconds_done, self._total)
        now = self._services.clock.now()
        if not progress_due(
            percent=percent, now=now, last_percent=self._last_percent, last_at=self._last_at
        ):
            return
        # The first note begins the progress when the recognition began, not now: the
        # model's load and first window count in the pace (ADR 51).
        begun = now - self._began if self._last_percent is None else None
        self._last_percent, self._last_at = percent, now
        self.written += 1
        self._writing = asyncio.ensure_future(
            note_progress(
                self._services,
                self._job,
                max(0.0, seconds_done),
                begun=begun,
                deliveries=self._deliveries,
            )
        )

    async def close(self) -> None:
        """Wait for the note being written, so none outlives the step; later calls do nothing.

        A thread a cancelled recognition left behind may still report: it writes nothing.
        """
        self._closed = True
        if self._writing is not None:
            await asyncio.gather(self._writing, return_exceptions=True)
