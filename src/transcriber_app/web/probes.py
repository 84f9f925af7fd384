"""``GET /health`` and ``GET /metrics``: the same two routes on ``serve`` and ``worker`` (ADR 38).

Both read the shared database, so every process of a deployment answers
with the same queue: jobs by state, request budgets and the conditions that
hold. The event counters of ``Metrics`` are this process's own.

Neither route authenticates (a load balancer and Prometheus must reach
them), so neither may cost the database in proportion to its callers or to
the jobs kept (red team 3: 30 clients on ``/health`` with 150k jobs pushed a
status read from 2 ms to 2 s). ``/health`` reads only the small conditions
table and the poller's one-row query, never counts jobs; callers that come
while a check runs share it. ``/metrics`` reads the gauges at most once per
``GAUGES_FRESH_SECONDS`` per process, concurrent scrapes sharing the read.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Generic, TypeVar

import attrs
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

from transcriber_app.bootstrap import Runtime
from transcriber_app.conditions import current_conditions
from transcriber_app.web.bodies import Unhealthy
from transcriber_app.web.endpoints import Endpoint, json_answer, text_answer
from transcriber_app.web.endpoints import routes as endpoint_routes
from transcriber_app.web.metrics import CONTENT_TYPE, Metrics
from transcriber_app.web.schemas import to_json
from transcriber_app.web.state import runtime_of
from transcriber_core import summary_steps
from transcriber_core.entities import Condition, DeliveryKind, State

log = logging.getLogger("transcriber.http")


#: How long one reading of the queue gauges serves further scrapes of this process.
GAUGES_FRESH_SECONDS = 5.0

T = TypeVar("T")


class SharedRead(Generic[T]):
    """One read shared by every caller that comes while it runs, kept ``fresh_for`` seconds after.

    A failed read is not kept: every waiting caller gets its error and the
    next caller reads again.
    """

    def __init__(self, read: Callable[[], Awaitable[T]], *, fresh_for: float = 0.0) -> None:
        self._read = read
        self._fresh_for = fresh_for
        self._running: asyncio.Future[T] | None = None
        self._kept: tuple[float, T] | None = None

    async def get(self) -> T:
        """The kept value while fresh, else the running read's, else a new read's."""
        if self._kept is not None and time.monotonic() - self._kept[0] < self._fresh_for:
            return self._kept[1]
        if self._running is None:
            self._running = asyncio.ensure_future(self._read())
            self._running.add_done_callback(self._done)
        # shield: one caller cancelled (its client went away) does not cancel the others'.
        return await asyncio.shield(self._running)

    def _done(self, future: asyncio.Future[T]) -> None:
        self._running = None
        if not future.cancelled() and future.exception() is None:
            self._kept = (time.monotonic(), future.result())


@attrs.frozen
class Gauges:
    """What a scrape reads from the database."""

    jobs: Mapping[State, int]
    deliveries: Mapping[DeliveryKind, int]
    budgets: Mapping[str, float] | None
    conditions: list[Condition]
    #: Summaries pending; None without ``[llm]``.
    summaries: int | None = None


@attrs.frozen
class ProbeReads:
    """The shared reads of one app's probes."""

    health: SharedRead[list[Condition]]
    gauges: SharedRead[Gauges]


def _reads(request: Request) -> ProbeReads:
    """This app's probe reads, made on first use."""
    state = request.app.state
    reads: ProbeReads | None = getattr(state, "probe_reads", None)
    if reads is None:
        runtime = runtime_of(request)
        reads = ProbeReads(
            health=SharedRead(lambda: _health_check(runtime)),
            gauges=SharedRead(lambda: _gauges(runtime), fresh_for=GAUGES_FRESH_SECONDS),
        )
        state.probe_reads = reads
    return reads


async def _health_check(runtime: Runtime) -> list[Condition]:
    """The conditions that hold; raises when the database does not answer. Counts no job."""
    services = runtime.services
    # The poller's query: one index probe per step state, whatever the number of jobs.
    await services.queue.ready_states(lease=services.settings.lease)
    return await current_conditions(services, runtime.space)


async def _gauges(runtime: Runtime) -> Gauges:
    services = runtime.services
    return Gauges(
        jobs=await services.listings.count_by_state(),
        deliveries=await services.outbox.pending_deliveries(),
        budgets=None if runtime.budgets is None else await runtime.budgets.levels(),
        conditions=await current_conditions(services, runtime.space),
        summaries=await services.summaries.count_pending_summaries()
        if services.summaries is not None and summary_steps.offered(services)
        else None,
    )


def metrics_of(request: Request) -> Metrics:
    """The metrics the app was created with."""
    metrics: Metrics = request.app.state.metrics
    return metrics


async def health(request: Request) -> Response:
    """``GET /health``: 200 when the database answers and no service condition holds.

    503 otherwise, as JSON naming the cause: ``database_unavailable``, or the
    first condition's code (``disk_full``, ``recognizer_credentials_rejected``,
    ...) with every code that holds in ``conditions``. Only codes and times
    are shown: the details are for the log and the admin page.
    """
    try:
        held = await _reads(request).health.get()
    except Exception as exc:  # noqa: BLE001 - any failure means unhealthy
        log.warning("health.error", extra={"error_type": type(exc).__name__})
        unhealthy = Unhealthy(
            error="database_unavailable", message="the job database does not answer"
        )
        return JSONResponse(to_json(unhealthy), status_code=503)
    if held:
        return JSONResponse(to_json(Unhealthy.of(held)), status_code=503)
    return PlainTextResponse("ok\n")


async def scrape(request: Request) -> Response:
    """``GET /metrics``: Prometheus text; queue gauges at most ``GAUGES_FRESH_SECONDS`` old."""
    collected = metrics_of(request)
    try:
        gauges = await _reads(request).gauges.get()
        collected.set_jobs(gauges.jobs)
        collected.set_deliveries(gauges.deliveries)
        if gauges.budgets is not None:
            collected.set_budgets(gauges.budgets)
        collected.set_conditions(gauges.conditions)
        if gauges.summaries is not None:
            collected.summaries_pending.set(gauges.summaries)
    except Exception as exc:  # noqa: BLE001 - the event counters are still worth a scrape
        log.warning("metrics.error", extra={"error_type": type(exc).__name__})
    return Response(collected.exposition(), media_type=CONTENT_TYPE)


#: The probes, declared once: mounted by ``serve`` (and in its OpenAPI document) and the worker.
ENDPOINTS: tuple[Endpoint, ...] = (
    Endpoint(
        method="GET",
        path="/health",
        handler=health,
        summary="Whether the service can do its work",
        answers=(
            text_answer(200, "the database answers and no service condition holds"),
            json_answer(503, Unhealthy, "the database does not answer, or a condition holds"),
        ),
    ),
    Endpoint(
        method="GET",
        path="/metrics",
        handler=scrape,
        summary="Prometheus text exposition",
        answers=(text_answer(200, "the metrics", media_type=CONTENT_TYPE),),
    ),
)


def routes() -> list[Route]:
    """The probe routes, alone: what ``transcriber worker`` serves."""
    return endpoint_routes(ENDPOINTS)
