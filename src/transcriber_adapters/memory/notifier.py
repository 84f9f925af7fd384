"""A notifier that remembers what it was asked to tell, instead of telling anyone."""

from __future__ import annotations

import asyncio

import attrs

from transcriber_core.entities import Job, Origin, OriginKind
from transcriber_core.ports import Event, Standing
from transcriber_core.summaries import Summary, SummaryState


@attrs.frozen
class Notice:
    """One notification: which job, where it would go, and what."""

    job_id: str
    origin: Origin
    event: Event
    #: The message a real notifier would send: the event, then the text or the reason.
    body: str


class MemoryNotifier:
    """Delivers to Telegram origins in memory; HTTP origins are ignored like a real notifier would.

    ``progress`` notices (edits of a chat's status message, SPEC §21) are kept
    apart in ``standings``, each with the ``Standing`` it was given, so
    ``notices`` and ``events_for`` read as the sender's story. It keeps no
    status message: ``notify`` answers None.

    ``fail_next`` makes one call raise.
    """

    def __init__(self) -> None:
        self.notices: list[Notice] = []
        #: ``(job id, standing)`` of each ``progress`` notice, in order.
        self.standings: list[tuple[str, Standing | None]] = []
        self._failures: list[Exception] = []
        self._changed = asyncio.Condition()

    def reset(self) -> None:
        """Forget every notice and pending failure."""
        self.notices.clear()
        self.standings.clear()
        self._failures.clear()

    def fail_next(self, error: Exception) -> None:
        """Make the next ``notify`` raise ``error``."""
        self._failures.append(error)

    def events_for(self, job_id: str) -> list[Event]:
        """The events told about one job, in order."""
        return [notice.event for notice in self.notices if notice.job_id == job_id]

    def delivered_to(self, chat_id: int) -> list[str]:
        """Every message body delivered to one chat, in order."""
        return [notice.body for notice in self.notices if notice.origin.chat_id == chat_id]

    async def wait_for(self, job_id: str, event: Event) -> Notice:
        """Wait until ``event`` has been told about ``job_id``, and return that notice."""
        async with self._changed:
            while True:
                for notice in self.notices:
                    if notice.job_id == job_id and notice.event is event:
                        return notice
                await self._changed.wait()

    async def notify(
        self, job: Job, event: Event, *, standing: Standing | None = None
    ) -> int | None:
        """Record the notice when the origin is a chat; ignore HTTP origins."""
        if self._failures:
            raise self._failures.pop(0)
        if job.origin.kind is not OriginKind.TELEGRAM:
            return None
        if event is Event.PROGRESS:
            async with self._changed:
                self.standings.append((job.id, standing))
                self._changed.notify_all()
            return None
        detail = job.text if event is Event.DONE else job.error
        await self._keep(job, event, f"{event.value}: {detail}" if detail else event.value)
        return None

    async def send_summary(self, job: Job, summary: Summary) -> None:
        """Record the summary (``summary: <text>``, or ``summary: failed: <reason>``) for a chat."""
        if self._failures:
            raise self._failures.pop(0)
        if job.origin.kind is not OriginKind.TELEGRAM:
            return
        detail = summary.text if summary.state is SummaryState.DONE else f"failed: {summary.error}"
        await self._keep(job, Event.SUMMARY, f"{Event.SUMMARY.value}: {detail}")

    async def _keep(self, job: Job, event: Event, body: str) -> None:
        async with self._changed:
            self.notices.append(Notice(job_id=job.id, origin=job.origin, event=event, body=body))
            self._changed.notify_all()
