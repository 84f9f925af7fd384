"""The outbox (ADR 35): which deliveries a job's move calls for, and sending one of them.

A delivery is written by the store in the same transaction as the move; the
core alone decides which (``deliveries_for``, ``end_deliveries``) and hands
them to ``create`` and ``save_if_held``, so a job that ended is never left with
its sender untold, whatever crashes next. Delivery loops take one at a time
under a lease (``deliver_next``), send it, and finish it, or give it back
with a pause, or give it up after ``Settings.delivery_window``: at least
once, never dropped on a transient failure.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from datetime import timedelta

from transcriber_core import webhooks
from transcriber_core.entities import (
    TERMINAL_EVENTS,
    Delivery,
    DeliveryKind,
    Event,
    Job,
    JobPart,
    NewDelivery,
    OriginKind,
    State,
)
from transcriber_core.errors import (
    CallbackRefused,
    JobNotFound,
    LeaseLost,
    NotifierUnavailable,
    ReceiverUnavailable,
    TranscriberError,
    TransientError,
)
from transcriber_core.policy import delivery_limit, delivery_pause
from transcriber_core.ports import Standing
from transcriber_core.progress import report_of
from transcriber_core.services import Services
from transcriber_core.summaries import SummaryState

log = logging.getLogger("transcriber.outbox")

#: The summaries a chat is sent (ADR 92): built, or given up with the reason.
SENT_SUMMARIES = frozenset({SummaryState.DONE, SummaryState.FAILED})


def deliveries_for(job: Job, event: Event) -> tuple[NewDelivery, ...]:
    """The deliveries ``event`` about ``job`` calls for, in the order they are written.

    A Telegram origin is told every event (``progress`` edits its status
    message, SPEC §21); a job with a ``callback_url`` is called when it ends
    only (not for ``accepted``: the caller has its 202).
    """
    kinds: list[NewDelivery] = []
    if job.origin.kind is OriginKind.TELEGRAM:
        kinds.append(NewDelivery(DeliveryKind.NOTICE, event))
    if job.callback_url is not None and event in TERMINAL_EVENTS.values():
        kinds.append(NewDelivery(DeliveryKind.WEBHOOK, event))
    return tuple(kinds)


def end_deliveries(job: Job) -> tuple[NewDelivery, ...]:
    """What saving ``job`` writes to the outbox: its end's deliveries, none before its end."""
    event = TERMINAL_EVENTS.get(job.state)
    return () if event is None else deliveries_for(job, event)


def move_deliveries(job: Job, *, before: State | None) -> tuple[NewDelivery, ...]:
    """What a step's save of ``job`` (taken in ``before``) writes: its end's, or a progress notice.

    A job that moved to another step tells its chat's status message
    (converting, recognising); one that stays in its step (a retry, a poll)
    tells nothing new.
    """
    ended = end_deliveries(job)
    if ended or before is None or job.state is before:
        return ended
    return deliveries_for(job, Event.PROGRESS)


def summary_deliveries(job: Job) -> tuple[NewDelivery, ...]:
    """What saving ``job``'s summary done or failed writes: a notice to its chat (ADR 92)."""
    if job.origin.kind is OriginKind.TELEGRAM:
        return (NewDelivery(DeliveryKind.NOTICE, Event.SUMMARY),)
    return ()


async def deliver_next(
    services: Services, *, job_id: str | None = None, kind: DeliveryKind | None = None
) -> bool:
    """Take one due delivery (of ``job_id``, of ``kind``, when given), try it, record the outcome.

    False when none was due.
    """
    acquisition_id = services.ids.new_id()
    delivery = await services.outbox.acquire_delivery(
        acquisition_id=acquisition_id, lease=services.settings.lease, job_id=job_id, kind=kind
    )
    if delivery is None:
        return False
    extra = {
        "job_id": delivery.job_id,
        "kind": delivery.kind.value,
        "event": delivery.event.value,
        "attempts": delivery.attempts,
    }
    try:
        job = await services.jobs.get(delivery.job_id)
    except JobNotFound:
        # The job was deleted: nothing is left to tell about.
        log.info("delivery.dropped", extra=extra)
        await _finish(services, delivery, acquisition_id)
        return True
    try:
        async with asyncio.timeout(delivery_limit(services.settings).total_seconds()):
            await _send(services, delivery, job, acquisition_id)
    except TransientError as exc:
        asked = (
            exc.retry_after if isinstance(exc, NotifierUnavailable | ReceiverUnavailable) else None
        )
        await _retry_or_give_up(services, delivery, acquisition_id, exc.message, asked, extra=extra)
    except TimeoutError:
        reason = "the delivery took too long"
        await _retry_or_give_up(services, delivery, acquisition_id, reason, None, extra=extra)
    except TranscriberError as exc:
        # Refused for good: the chat is gone, the bot blocked, the address not allowed.
        log.warning(
            "delivery.given_up", extra={**extra, "error_type": type(exc).__name__, "why": "refused"}
        )
        await _finish(services, delivery, acquisition_id)
    except Exception as exc:  # noqa: BLE001 - unknown: retried within the window, never dropped
        reason = f"unexpected error sending the {delivery.kind.value}"
        log.warning("delivery.error", extra={**extra, "error_type": type(exc).__name__})
        await _retry_or_give_up(services, delivery, acquisition_id, reason, None, extra=extra)
    else:
        log.info("delivery.sent", extra=extra)
        await _finish(services, delivery, acquisition_id)
    return True


async def _send(services: Services, delivery: Delivery, job: Job, acquisition_id: str) -> None:
    if delivery.event is Event.SUMMARY:
        summary = (
            None if services.summaries is None else await services.summaries.get_summary(job.id)
        )
        # Asked again since (pending: its own save sends it) or deleted: nothing to send.
        if summary is not None and summary.state in SENT_SUMMARIES:
            await services.notifier.send_summary(job, summary)
        return
    if delivery.kind is DeliveryKind.NOTICE:
        standing = await standing_of(services, job)
        message_id = await services.notifier.notify(job, delivery.event, standing=standing)
        if message_id is not None and message_id != job.status_message_id:
            try:
                await services.outbox.save_status_message(
                    delivery, message_id, acquisition_id=acquisition_id
                )
            except LeaseLost:
                # Sent, but another loop took the notice: it may send its own status message.
                log.warning("delivery.lease_lost", extra={"job_id": job.id})
        return
    if job.callback_url is None:
        raise CallbackRefused("the job has no callback URL")
    if services.webhooks is None:
        # Another process may hold the secret (a worker host configured apart): wait for it.
        raise ReceiverUnavailable("this process sends no webhooks ([webhooks] secret is unset)")
    await services.webhooks.send(job.callback_url, webhooks.body(job, delivery.event))


async def standing_of(services: Services, job: Job) -> Standing:
    """Where ``job`` stands, for its chat's status message: queue place, parts, progress."""
    position = None
    parts: list[JobPart] = []
    if not job.state.is_terminal:
        position = await services.jobs.queue_position(job.id, lease=services.settings.lease)
        parts = await services.jobs.get_parts(job.id)
    report = report_of(job)
    return Standing(
        message_id=job.status_message_id,
        queue_position=position,
        parts_done=sum(part.done for part in parts) if parts else None,
        parts_total=len(parts) if parts else None,
        percent=None if report is None else report.percent,
        eta_seconds=None if report is None else report.eta_seconds,
    )


async def _retry_or_give_up(
    services: Services,
    delivery: Delivery,
    acquisition_id: str,
    reason: str,
    asked: timedelta | None,
    *,
    extra: Mapping[str, object],
) -> None:
    if delivery.event is Event.PROGRESS and asked is None:
        # A status edit is tried again only when asked to wait (a chat's edit pace, a 429):
        # otherwise the job's next move or note sends a newer one, and none holds up the
        # job's later notices (ADR 51).
        log.info("delivery.given_up", extra={**extra, "why": "progress_failed"})
        await _finish(services, delivery, acquisition_id)
        return
    pause = delivery_pause(delivery, asked, services.settings)
    if pause is None:
        log.warning("delivery.given_up", extra={**extra, "why": "window_passed"})
        await _finish(services, delivery, acquisition_id)
        return
    log.warning("delivery.retry", extra={**extra, "pause_seconds": pause.total_seconds()})
    try:
        await services.outbox.retry_delivery(
            delivery, acquisition_id=acquisition_id, delay=pause, error=reason
        )
    except LeaseLost:
        log.warning("delivery.lease_lost", extra=extra)


async def _finish(services: Services, delivery: Delivery, acquisition_id: str) -> None:
    try:
        await services.outbox.finish_delivery(delivery, acquisition_id=acquisition_id)
    except LeaseLost:
        # Another loop took it after our lease ran out; it may be sent twice (at least once).
        log.warning("delivery.lease_lost", extra={"job_id": delivery.job_id})
