"""``GET /health`` and ``GET /metrics``: the same two routes on ``serve`` and ``worker`` (ADR 38).

Both read the shared database at request time, so every process of a
deployment answers with the same queue: jobs by state, request budgets and
the conditions that hold. The event counters of ``Metrics`` are this
process's own.
"""

from __future__ import annotations

import logging

from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

from transcriber_app.conditions import current_conditions
from transcriber_app.web.bodies import Unhealthy
from transcriber_app.web.endpoints import Endpoint, json_answer, text_answer
from transcriber_app.web.endpoints import routes as endpoint_routes
from transcriber_app.web.metrics import CONTENT_TYPE, Metrics
from transcriber_app.web.schemas import to_json
from transcriber_app.web.state import runtime_of

log = logging.getLogger("transcriber.http")


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
    runtime = runtime_of(request)
    try:
        await runtime.services.listings.count_by_state()
        held = await current_conditions(runtime.services, runtime.space)
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
    """``GET /metrics``: Prometheus text; queue gauges are read from the database each time."""
    runtime = runtime_of(request)
    collected = metrics_of(request)
    try:
        collected.set_jobs(await runtime.services.listings.count_by_state())
        collected.set_deliveries(await runtime.services.outbox.pending_deliveries())
        if runtime.budgets is not None:
            collected.set_budgets(await runtime.budgets.levels())
        collected.set_conditions(await current_conditions(runtime.services, runtime.space))
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
