"""The worker loop: acquire, mark exhausted jobs dead, run a step under a renewed lease, save.

One ``Workers`` per process runs a few loops per step state and one poller.
Idle loops wait on ``Wakeup``; the poller asks the repository once per idle
interval which states have work, so an idle process costs one query per
second however many loops it runs (reference: queue rule 10).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Mapping
from datetime import timedelta

import attrs

from transcriber_core.deletion import FileLedger, forget_writes, shielded
from transcriber_core.entities import EVERYWHERE, STEP_STATES, DeliveryKind, Job, JobPart, State
from transcriber_core.errors import (
    DatabaseDown,
    LeaseLost,
    PermanentError,
    ServiceCondition,
    TransientError,
)
from transcriber_core.leases import bounded, renewed
from transcriber_core.naming import held_by
from transcriber_core.notices import remove_storage_copy
from transcriber_core.outbox import deliver_next, move_deliveries
from transcriber_core.part_steps import recognize_part
from transcriber_core.policy import (
    Settings,
    condition_pause,
    condition_scope,
    conditions_cleared_by,
    is_exhausted,
    is_express_loop,
    outage_pause,
    reconnect_pause,
    retry_pause,
)
from transcriber_core.ports import Ready
from transcriber_core.retention import sweep
from transcriber_core.services import Services
from transcriber_core.steps import STEPS
from transcriber_core.summary_steps import offered, summary_loop
from transcriber_core.transitions import delay_of, transition
from transcriber_core.wakeup import OUTBOX, SUMMARIES

log = logging.getLogger("transcriber.worker")

#: Webhook loops per ``[workers] deliver`` loop (ADR 44): a hanging receiver holds one
#: loop for a try's timeout, and the sender fails its other calls at once meanwhile.
WEBHOOK_LOOPS_PER_DELIVERY_LOOP = 4


class Outages:
    """Which steps of this process met a dependency down, and until when they pause (ADR 43).

    While the recognizer, the storage or the database is down, the loops of
    the step that met it take no job until the pause is over, so the outage
    is probed by one try at a time with a growing pause (``outage_pause``),
    not hammered by every job in the queue. A step that finishes without
    error ends its streak.
    """

    def __init__(self) -> None:
        self._streak: dict[State, int] = {}
        self._until: dict[State, float] = {}

    def met(self, state: State, settings: Settings) -> timedelta:
        """Note one more outage in a row in ``state``'s step; the pause it takes."""
        streak = self._streak.get(state, 0) + 1
        self._streak[state] = streak
        pause = outage_pause(streak, settings)
        self._until[state] = asyncio.get_running_loop().time() + pause.total_seconds()
        return pause

    def ended(self, state: State) -> None:
        """``state``'s step worked: no pause any more."""
        self._streak.pop(state, None)
        self._until.pop(state, None)

    def remaining(self, state: State) -> float:
        """Seconds ``state``'s loops still pause; 0 when they may take a job."""
        until = self._until.get(state)
        return 0.0 if until is None else max(0.0, until - asyncio.get_running_loop().time())


@attrs.frozen
class Lease:
    """A job this worker holds, and the acquisition id that proves it."""

    job: Job
    acquisition_id: str


async def acquire_next(
    services: Services, state: State, *, short_only: bool = False
) -> Lease | None:
    """Lease the next live job in ``state``; jobs past the attempt limit are marked dead on the way.

    ``short_only`` is the express lane: only jobs marked short (ADR 27).

    The limit is not in the acquire filter, so a job never leaves the queue
    without a state: the acquirer that receives it moves it to ``dead``,
    tells the sender, and looks for the next one (reference: queue rule 6).
    """
    settings = services.settings
    while True:
        acquisition_id = services.ids.new_id()
        job = await services.queue.acquire(
            state, acquisition_id=acquisition_id, lease=settings.lease, short_only=short_only
        )
        if job is None:
            return None
        if not is_exhausted(job.attempts, settings):
            return Lease(job, acquisition_id)
        reason = f"gave up after {settings.max_attempts} attempts"
        if job.error:
            reason = f"{reason}; last error: {job.error}"
        # ``updated`` is for display only: nothing is judged by it (ADR 30).
        dead = transition(job, State.DEAD, now=services.clock.now(), error=reason)
        log.warning(
            "job.dead", extra={"job_id": job.id, "state": state.value, "attempts": job.attempts}
        )
        await _save_and_announce(services, dead, acquisition_id)


@attrs.frozen
class PartLease:
    """A part this worker holds, and the acquisition id that proves it (ADR 52)."""

    part: JobPart
    acquisition_id: str


async def acquire_next_part(services: Services) -> PartLease | None:
    """Lease the next part of any split job; parts past the attempt limit fail on the way.

    As ``acquire_next``: the limit is not in the acquire's filter, so the
    taker that receives an exhausted part marks it failed for good (its job
    is due then, and fails naming it) and looks for the next one.
    """
    settings = services.settings
    while True:
        # The lease names its holder, so the admin page shows who works on which part.
        acquisition_id = held_by(services.worker or services.host, services.ids.new_id())
        part = await services.parts.acquire_part(
            acquisition_id=acquisition_id, lease=settings.lease
        )
        if part is None:
            return None
        if not is_exhausted(part.attempts, settings):
            return PartLease(part, acquisition_id)
        reason = f"gave up after {settings.max_attempts} attempts"
        if part.error:
            reason = f"{reason}; last error: {part.error}"
        log.warning(
            "part.dead",
            extra={"job_id": part.job_id, "part": part.index, "attempts": part.attempts},
        )
        gave_up = attrs.evolve(part, failed=True, error=reason, acquisition_id=None)
        await _save_part(services, gave_up, acquisition_id, None)


async def process_part(
    services: Services, lease: PartLease, *, outages: Outages | None = None
) -> JobPart | None:
    """Run a leased part's step under its renewed lease and save it; None when the lease was lost.

    The retry policy is the job's: a transient failure pauses the part alone
    (``retry_pause`` of its own attempts), a permanent one fails it for good
    (and its job), a service condition gives the attempt back. Files stored
    for a part whose job was deleted meanwhile are deleted (ADR 36).
    """
    part = lease.part
    extra = {"job_id": part.job_id, "part": part.index, "attempts": part.attempts}
    log.info("part.start", extra=extra)
    ledger = FileLedger()
    delay: timedelta | None = None
    settings = services.settings
    try:
        result, delay = await _run_part_leased(ledger.watch(services), lease)
    except LeaseLost:
        log.warning("part.lease_lost", extra=extra)
        await forget_writes(services, part.job_id, ledger)
        return None
    except PermanentError as exc:
        log.warning("part.failed", extra={**extra, "error_type": type(exc).__name__})
        result = attrs.evolve(part, failed=True, error=exc.message)
    except ServiceCondition as exc:
        delay = condition_pause(exc, settings)
        if exc.outage:
            delay = (outages or Outages()).met(State.RECOGNIZE, settings)
        result = attrs.evolve(part, error=exc.message, attempts=max(part.attempts - 1, 0))
        await _report_condition(services, exc)
    except TransientError as exc:
        delay = retry_pause(part.attempts, settings)
        result = attrs.evolve(part, error=exc.message)
        log.warning("part.retry", extra={**extra, "error_type": type(exc).__name__})
    except Exception as exc:  # noqa: BLE001 - a part must never take its worker down
        delay = retry_pause(part.attempts, settings)
        result = attrs.evolve(part, error="unexpected error in the recognition of a part")
        log.warning("part.retry", extra={**extra, "error_type": type(exc).__name__})
    released = attrs.evolve(result, acquisition_id=None)
    if not await _save_part(services, released, lease.acquisition_id, delay):
        await forget_writes(services, part.job_id, ledger)
        return None
    if released.error is None and outages is not None:
        outages.ended(State.RECOGNIZE)
    return released


async def _save_part(
    services: Services, part: JobPart, acquisition_id: str, delay: timedelta | None
) -> bool:
    """Save a part's result fenced, to its end even on shutdown; wake what it made due."""
    try:
        due = await shielded(
            services.parts.save_part_if_held(part, acquisition_id=acquisition_id, delay=delay)
        )
    except LeaseLost:
        log.warning("part.save_lease_lost", extra={"job_id": part.job_id, "part": part.index})
        return False
    if due:
        # The last part: the job's check step joins the parts now.
        services.wakeup.notify(State.CHECK)
    if part.done:
        # A /v1 stream waiting on this job sends the part's text now.
        services.wakeup.job_changed(part.job_id)
    elif not part.finished and (delay is None or delay <= timedelta(0)):
        services.wakeup.notify(State.RECOGNIZE)
    return True


async def _run_part_leased(
    services: Services, lease: PartLease
) -> tuple[JobPart, timedelta | None]:
    """Run the part's step, renewing its lease; a lost lease cancels it and raises ``LeaseLost``."""
    part = lease.part
    state = State.RECOGNIZE if part.operation_id is None else State.CHECK
    return await renewed(
        bounded(
            recognize_part(part, services),
            services.settings.ceiling(state),
            past="the recognition of a part ran past its ceiling",
        ),
        lambda: services.parts.renew_part(
            part.job_id, part.index, acquisition_id=lease.acquisition_id
        ),
        every=services.settings.lease_renewal,
        job_id=part.job_id,
    )


async def process(
    services: Services, lease: Lease, *, outages: Outages | None = None
) -> Job | None:
    """Run the step of a leased job and save its result; None when the lease was lost.

    ``outages`` is the process's record of dependencies found down; without
    one, each outage is the first of its streak.

    The step's stores note every file it stores: when the lease turns out
    lost because the job was deleted meanwhile, those files are deleted too,
    so a deleted job leaves nothing behind (ADR 36).
    """
    job = lease.job
    state = job.state
    extra = {"job_id": job.id, "state": state.value, "attempts": job.attempts}
    log.info("step.start", extra=extra)
    loop = asyncio.get_running_loop()
    started = loop.time()
    ledger = FileLedger()
    try:
        result = await _run_leased(ledger.watch(services), lease)
    except LeaseLost:
        log.warning("step.lease_lost", extra=extra)
        await forget_writes(services, job.id, ledger)
        return None
    except PermanentError as exc:
        log.warning("step.failed", extra={**extra, "error_type": type(exc).__name__})
        result = transition(job, State.FAILED, now=services.clock.now(), error=exc.message)
    except ServiceCondition as exc:
        pause = None
        if exc.outage:
            pause = (outages or Outages()).met(state, services.settings)
        result = _wait_for_service(services, job, exc, pause)
        await _report_condition(services, exc)
    except TransientError as exc:
        result = _retry(services, job, exc.message, type(exc).__name__)
    except Exception as exc:  # noqa: BLE001 - a step must never take its worker down
        reason = f"unexpected error in the {state.value} step"
        result = _retry(services, job, reason, type(exc).__name__)
    seconds = round(loop.time() - started, 6)
    log.info("step.end", extra={**extra, "to": result.state.value, "seconds": seconds})
    saved = await _save_and_announce(services, result, lease.acquisition_id, before=state)
    if saved is None:
        await forget_writes(services, job.id, ledger)
    elif result.error is None:
        if outages is not None:
            outages.ended(state)
        await _clear_conditions(services, state)
    return saved


def _wait_for_service(
    services: Services, job: Job, condition: ServiceCondition, pause: timedelta | None = None
) -> Job:
    """The job waits with its attempt given back: the fault is ours, not its.

    ``pause`` is an outage's backed-off wait; otherwise the condition's own.
    """
    now = services.clock.now()
    if pause is None:
        pause = condition_pause(condition, services.settings)
    log.warning(
        "step.service_condition",
        extra={
            "job_id": job.id,
            "state": job.state.value,
            "code": condition.code,
            "pause_seconds": pause.total_seconds(),
        },
    )
    return transition(
        job,
        job.state,
        now=now,
        error=condition.message,
        delay_until=now + pause,
        attempt_spent=False,
    )


async def _report_condition(services: Services, condition: ServiceCondition) -> None:
    """Note the condition where ``/health`` of every process looks; a failure is only logged.

    On a full disk the database may refuse the write too; the health check
    also measures the data dir's free space itself, so nothing depends on it.
    """
    store = services.conditions
    if store is None or not condition.fault:
        # Throttling paces itself; it is logged with the wait, not a health fault.
        return
    try:
        await store.report(
            condition.code,
            scope=condition_scope(condition, services.host),
            message=condition.message,
        )
    except Exception as exc:  # noqa: BLE001 - the job already waits; health has its own eyes
        log.warning(
            "condition.report_error",
            extra={"code": condition.code, "error_type": type(exc).__name__},
        )


async def _clear_conditions(services: Services, state: State) -> None:
    """A step that finished proves the conditions about what it used are gone."""
    store = services.conditions
    codes = conditions_cleared_by(state)
    if store is None or not codes:
        return
    try:
        await store.clear(codes, scopes=frozenset({services.host, EVERYWHERE}))
    except Exception as exc:  # noqa: BLE001 - the condition ages out instead
        log.warning("condition.clear_error", extra={"error_type": type(exc).__name__})


def _retry(services: Services, job: Job, reason: str, error_type: str) -> Job:
    now = services.clock.now()
    pause = retry_pause(job.attempts, services.settings)
    log.warning(
        "step.retry",
        extra={
            "job_id": job.id,
            "state": job.state.value,
            "attempts": job.attempts,
            "error_type": error_type,
            "pause_seconds": pause.total_seconds(),
        },
    )
    return transition(job, job.state, now=now, error=reason, delay_until=now + pause)


async def _run_leased(services: Services, lease: Lease) -> Job:
    """Run the step, renewing the lease; a lost lease cancels the step and raises ``LeaseLost``."""
    job = lease.job
    ceiling = services.settings.ceiling(job.state)
    return await renewed(
        bounded(
            STEPS[job.state](job, services),
            ceiling,
            past=f"the {job.state.value} step ran past its {ceiling} ceiling",
        ),
        lambda: services.queue.renew(job.id, acquisition_id=lease.acquisition_id),
        every=services.settings.lease_renewal,
        job_id=job.id,
    )


async def _save_and_announce(
    services: Services, job: Job, acquisition_id: str, *, before: State | None = None
) -> Job | None:
    """Save a step's or acquirer's result fenced, then tidy and wake what follows.

    Once started it runs to its end even if the worker is cancelled (shutdown):
    a save that commits while its caller goes away would otherwise leave a
    finished job whose Object Storage copy is never removed. Telling the
    sender cannot be lost that way: the save wrote it into the outbox.
    """
    task = asyncio.ensure_future(_save_then_announce(services, job, acquisition_id, before))
    try:
        return await asyncio.shield(task)
    except asyncio.CancelledError:
        while not task.done():
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.wait({task})
        raise


async def _save_then_announce(
    services: Services, job: Job, acquisition_id: str, before: State | None
) -> Job | None:
    # Every pause a step or the worker chose travels as a duration: the store adds it
    # to its own clock, so this worker's clock never shifts when the job is due (ADR 30).
    delay = delay_of(job)
    try:
        await _save_fenced(services, job, acquisition_id, delay, before)
    except LeaseLost:
        log.warning("save.lease_lost", extra={"job_id": job.id, "state": job.state.value})
        return None
    if not job.state.is_terminal:
        if delay is None or delay <= timedelta(0):
            services.wakeup.notify(job.state)
        if job.state is State.CHECK and job.operation_id is None:
            # A split job waits for its parts: the part loops here take them now (ADR 52).
            services.wakeup.notify(State.RECOGNIZE)
        return job
    # The save wrote the job's deliveries (ADR 35): a delivery loop here sends them now.
    services.wakeup.notify(OUTBOX)
    if job.state is State.DONE:
        # A summary asked for at intake waited for this (ADR 83).
        services.wakeup.notify(SUMMARIES)
    services.wakeup.job_changed(job.id)
    await remove_storage_copy(services, job)
    return job


async def _save_fenced(
    services: Services,
    job: Job,
    acquisition_id: str,
    delay: timedelta | None,
    before: State | None = None,
) -> None:
    """Save ``job`` if still held; while the database is down, try again for up to a lease.

    A step's work is not thrown away because PostgreSQL restarted under it:
    the save is fenced by the acquisition id, so a later try is as safe as
    the first, and only a lease passed to another worker (``LeaseLost``) or a
    database down longer than a lease ends the tries.
    """
    loop = asyncio.get_running_loop()
    give_up = loop.time() + services.settings.lease.total_seconds()
    failures = 0
    deliveries = move_deliveries(job, before=before)
    while True:
        try:
            await services.queue.save_if_held(
                job, acquisition_id=acquisition_id, delay=delay, deliveries=deliveries
            )
        except DatabaseDown:
            failures += 1
            pause = reconnect_pause(failures, services.settings).total_seconds()
            if loop.time() + pause > give_up:
                raise
            log.warning(
                "save.database_down",
                extra={"job_id": job.id, "state": job.state.value, "pause_seconds": pause},
            )
            await asyncio.sleep(pause)
        else:
            return


class Workers:
    """The worker loops of one process and the poller that wakes them.

    ``concurrency`` says how many loops each step state gets (0 or absent:
    none here). Of a state's loops, when it has two or more, the first is
    the express lane and takes only short jobs; the others take any job in
    queue order, so a long job is never passed over by them (ADR 27). The
    general recognize loops also take the parts of split recordings when no
    job waits in ``recognize`` (``acquire_next_part``, ADR 52); the express
    loop never does.
    ``deliveries`` loops send the outbox's Telegram notices and
    ``WEBHOOK_LOOPS_PER_DELIVERY_LOOP`` times as many its webhooks (ADR 35,
    40): a receiver that hangs can hold a webhook loop, never a notice's.
    """

    def __init__(
        self,
        services: Services,
        concurrency: Mapping[State, int] | None = None,
        *,
        deliveries: int = 1,
    ) -> None:
        self.services = services
        self.concurrency = dict(concurrency or dict.fromkeys(STEP_STATES, 1))
        for state, count in self.concurrency.items():
            if state not in STEP_STATES or count < 0:
                raise ValueError(f"no {count} loops can work on {state.value}")
        if deliveries < 0:
            raise ValueError("the number of delivery loops must not be negative")
        self.deliveries = deliveries
        self._stopping = asyncio.Event()
        #: Steps being processed now (a job held by one of this pool's loops).
        self.running = 0
        self._tasks: list[asyncio.Task[None]] = []
        self._poller: asyncio.Task[None] | None = None
        self._sweeper: asyncio.Task[None] | None = None
        self._listener: asyncio.Task[None] | None = None
        self._outages = Outages()

    def start(self) -> None:
        """Start the retention sweeper, the poller, the wake-up feed's listener and the loops.

        Every process offers to sweep, whatever its counts: the sweep lease
        picks one at a time (ADR 36), and the wake-up feed's listener runs
        wherever there is a feed (a ``/v1`` answer waits on it). With every
        count at 0 nothing else starts, not even the poller or the delivery
        loops: such a process
        (an API-only ``serve``) costs the queue no query (ADR 38); the
        processes that run steps send the outbox's deliveries (ADR 35).
        """
        if self._tasks or self._sweeper is not None:
            raise RuntimeError("workers already started")
        self._sweeper = asyncio.create_task(self._sweep(), name="transcriber-retention")
        feed = self.services.wakeup_feed
        if feed is not None:
            # Other processes' wake-ups fan out to this process's loops (ADR 31), and
            # their jobs' ends to the /v1 answers waiting here (ADR 46), workers or not.
            wakeup = self.services.wakeup
            self._listener = asyncio.create_task(
                feed.listen(wakeup.notify, job_changed=wakeup.job_changed),
                name="transcriber-wakeup-feed",
            )
        if not any(self.concurrency.values()):
            return
        self._poller = asyncio.create_task(self._poll(), name="transcriber-poller")
        for state, count in self.concurrency.items():
            for index in range(count):
                express = is_express_loop(index, count)
                lane = "express" if express else str(index)
                self._tasks.append(
                    asyncio.create_task(
                        self._loop(state, short_only=express),
                        name=f"transcriber-{state.value}-{lane}",
                    )
                )
        for kind, count in (
            (DeliveryKind.NOTICE, self.deliveries),
            (DeliveryKind.WEBHOOK, self.deliveries * WEBHOOK_LOOPS_PER_DELIVERY_LOOP),
        ):
            for index in range(count):
                self._tasks.append(
                    asyncio.create_task(
                        self._deliver(kind), name=f"transcriber-deliver-{kind.value}-{index}"
                    )
                )
        if offered(self.services):
            # One loop: the model's server is the bottleneck, and every process runs one (ADR 83).
            self._tasks.append(
                asyncio.create_task(
                    summary_loop(self.services, self._stopping), name="transcriber-summaries"
                )
            )

    def stop_intake(self) -> None:
        """Take no more jobs; running steps go on."""
        self._stopping.set()
        for state in self.concurrency:
            self.services.wakeup.notify(state)
        self.services.wakeup.notify(OUTBOX)
        self.services.wakeup.notify(SUMMARIES)

    async def drain(self, grace: float) -> None:
        """Stop intake, let running steps finish for ``grace`` seconds, then cancel them.

        A cancelled step writes nothing; its lease expires and another worker
        takes the job again.
        """
        self.stop_intake()
        if self._listener is not None:
            self._listener.cancel()
            await asyncio.gather(self._listener, return_exceptions=True)
            self._listener = None
        for background in (self._poller, self._sweeper):
            if background is not None:
                background.cancel()
        if self._tasks:
            _, pending = await asyncio.wait(self._tasks, timeout=grace)
            for task in pending:
                task.cancel()
            await asyncio.gather(*self._tasks, return_exceptions=True)
        for background in (self._poller, self._sweeper):
            if background is not None:
                await asyncio.gather(background, return_exceptions=True)
        self._sweeper = None
        self._tasks.clear()

    async def _loop(self, state: State, *, short_only: bool = False) -> None:
        services = self.services
        idle = services.settings.idle_poll_interval.total_seconds()
        while not self._stopping.is_set():
            held = self._outages.remaining(state)
            if held > 0:
                # A dependency of this step is down: wait out the pause, then probe.
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(held):
                        await self._stopping.wait()
                continue
            token = services.wakeup.token(state)
            try:
                lease = await acquire_next(services, state, short_only=short_only)
            except Exception as exc:  # noqa: BLE001 - a broken database must not end the loop
                log.warning(
                    "acquire.error", extra={"state": state.value, "error_type": type(exc).__name__}
                )
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(idle):
                        await token.wait()
                continue
            if lease is None:
                # The express loop never takes a part: a voice note never waits behind one.
                if state is State.RECOGNIZE and not short_only and await self._part():
                    continue
                await token.wait()
                continue
            self.running += 1
            try:
                await process(services, lease, outages=self._outages)
            except Exception as exc:  # noqa: BLE001 - the job's lease expires and it is retried
                log.warning(
                    "process.error",
                    extra={
                        "job_id": lease.job.id,
                        "state": state.value,
                        "error_type": type(exc).__name__,
                    },
                )
            finally:
                self.running -= 1

    async def _part(self) -> bool:
        """Take and recognise the next part of any split job; False when there was none."""
        services = self.services
        try:
            lease = await acquire_next_part(services)
        except Exception as exc:  # noqa: BLE001 - a broken database must not end the loop
            log.warning("acquire_part.error", extra={"error_type": type(exc).__name__})
            return False
        if lease is None:
            return False
        self.running += 1
        try:
            await process_part(services, lease, outages=self._outages)
        except Exception as exc:  # noqa: BLE001 - the part's lease expires and it is retried
            log.warning(
                "process_part.error",
                extra={"job_id": lease.part.job_id, "error_type": type(exc).__name__},
            )
        finally:
            self.running -= 1
        return True

    async def _deliver(self, kind: DeliveryKind) -> None:
        """Send due deliveries of ``kind`` one at a time; wait for a wake-up when none is due."""
        services = self.services
        idle = services.settings.idle_poll_interval.total_seconds()
        while not self._stopping.is_set():
            token = services.wakeup.token(OUTBOX)
            try:
                if await deliver_next(services, kind=kind):
                    continue
            except Exception as exc:  # noqa: BLE001 - a broken database must not end the loop
                log.warning("deliver.error", extra={"error_type": type(exc).__name__})
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(idle):
                        await token.wait()
                continue
            await token.wait()

    async def _poll(self) -> None:
        """Ask the repository once per tick what is ready and wake those loops (one query)."""
        services = self.services
        interval = services.settings.idle_poll_interval.total_seconds()
        while not self._stopping.is_set():
            try:
                ready = await services.queue.ready_states(lease=services.settings.lease)
            except Exception as exc:  # noqa: BLE001 - try again at the next tick
                log.warning("poll.error", extra={"error_type": type(exc).__name__})
                ready = Ready()
            for state in ready.states:
                services.wakeup.notify(state)
            if ready.parts_due:
                # Parts are taken by the recognize loops (ADR 52).
                services.wakeup.notify(State.RECOGNIZE)
            # A retry's pause ended, or another process wrote a delivery.
            if ready.delivery_due and self.deliveries:
                services.wakeup.notify(OUTBOX)
            await asyncio.sleep(interval)

    async def _sweep(self) -> None:
        """Offer to sweep at start and every ``sweep_interval``; the lease picks one process."""
        services = self.services
        interval = services.settings.sweep_interval.total_seconds()
        while not self._stopping.is_set():
            try:
                await sweep(services)
            except Exception as exc:  # noqa: BLE001 - try again at the next interval
                log.warning("retention.error", extra={"error_type": type(exc).__name__})
            await asyncio.sleep(interval)
