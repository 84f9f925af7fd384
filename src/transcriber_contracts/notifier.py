"""The contract every Notifier adapter passes."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Protocol

import attrs

from transcriber_core.entities import Job, Origin, State
from transcriber_core.ports import Event, Notifier
from transcriber_core.transitions import transition


class Inbox(Protocol):
    """What reached the far side, as the suite reads it back."""

    async def delivered(self, chat_id: int) -> list[str]:
        """Every text or document body delivered to ``chat_id`` so far, in order."""
        ...


@attrs.frozen(kw_only=True)
class NotifierCase:
    """What the suite needs: the adapter, a view of what it delivered, and a reachable chat."""

    notifier: Notifier
    inbox: Inbox
    chat_id: int


_NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


def _job(chat_id: int, state: State = State.CONVERT, **changes: object) -> Job:
    job = Job(
        id="contract-job-0000000000",
        state=State.CONVERT,
        origin=Origin.telegram(chat_id, 42),
        created=_NOW,
        updated=_NOW,
    )
    if state is State.CONVERT:
        return job
    return transition(job, state, now=_NOW, **changes)  # type: ignore[arg-type]


class NotifierContract:
    """Subclass and provide an async fixture ``case`` returning a ``NotifierCase``."""

    async def test_done_delivers_the_transcript(self, case: NotifierCase) -> None:
        """A done job's transcript reaches its chat."""
        job = _job(case.chat_id)
        job = transition(job, State.RECOGNIZE, now=_NOW)
        job = transition(job, State.CHECK, now=_NOW)
        job = transition(job, State.DONE, now=_NOW, text="the quick brown fox")
        await case.notifier.notify(job, Event.DONE)
        delivered = await case.inbox.delivered(case.chat_id)
        assert any("the quick brown fox" in body for body in delivered)

    async def test_failed_delivers_the_reason(self, case: NotifierCase) -> None:
        """A failed job's reason reaches its chat."""
        job = _job(case.chat_id, State.FAILED, error="the recording has no audio stream")
        await case.notifier.notify(job, Event.FAILED)
        delivered = await case.inbox.delivered(case.chat_id)
        assert any("no audio stream" in body for body in delivered)

    async def test_dead_is_told(self, case: NotifierCase) -> None:
        """A dead job produces a message in its chat."""
        job = _job(case.chat_id, State.DEAD, error="gave up after 5 attempts")
        await case.notifier.notify(job, Event.DEAD)
        assert await case.inbox.delivered(case.chat_id)

    async def test_accepted_is_told(self, case: NotifierCase) -> None:
        """An accepted job produces a message in its chat."""
        await case.notifier.notify(_job(case.chat_id), Event.ACCEPTED)
        assert await case.inbox.delivered(case.chat_id)

    async def test_http_origin_is_ignored_quietly(self, case: NotifierCase) -> None:
        """A job from HTTP has nobody to message; notify returns without error or delivery."""
        job = attrs.evolve(_job(case.chat_id), origin=Origin.http())
        await case.notifier.notify(job, Event.DONE)
        assert await case.inbox.delivered(case.chat_id) == []

    async def test_messages_arrive_in_order(self, case: NotifierCase) -> None:
        """Two notices for one chat arrive in the order they were sent."""
        accepted = _job(case.chat_id)
        failed = _job(case.chat_id, State.FAILED, error="second notice")
        await case.notifier.notify(accepted, Event.ACCEPTED)
        await case.notifier.notify(failed, Event.FAILED)
        delivered = await case.inbox.delivered(case.chat_id)
        assert len(delivered) == 2
        assert "second notice" in delivered[1]
