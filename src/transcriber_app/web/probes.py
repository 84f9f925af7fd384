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
from transcriber_app.web.metrics import CONTENT_TYPE, Metrics
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
        await runtime.services.repo.count_by_state()
        held = await current_conditions(runtime)
    except Exception as exc:  # noqa: BLE001 - any failure means unhealthy
        log.warning("health.error", extra={"error_type": type(exc).__name__})
        return JSONResponse(
            {"error": "database_unavailable", "message": "the job database does not answer"},
            status_code=503,
        )
    if held:
        codes = list(dict.fromkeys(condition.code for condition in held))
        return JSONResponse(
            {
                "error": codes[0],
                "message": "the service cannot do its work now: " + ", ".join(codes),
                "conditions": [{"code": c.code, "since": c.since.isoformat()} for c in held],
            },
            status_code=503,
        )
    return PlainTextResponse("ok\n")


async def scrape(request: Request) -> Response:
    """``GET /metrics``: Prometheus text; queue gauges are read from the database each time."""
    runtime = runtime_of(request)
    collected = metrics_of(request)
    try:
        collected.set_jobs(await runtime.services.repo.count_by_state())
        if runtime.budgets is not None:
            collected.set_budgets(await runtime.budgets.levels(now=runtime.services.clock.now()))
        collected.set_conditions(await current_conditions(runtime))
    except Exception as exc:  # noqa: BLE001 - the event counters are still worth a scrape
        log.warning("metrics.error", extra={"error_type": type(exc).__name__})
    return Response(collected.exposition(), media_type=CONTENT_TYPE)


def routes() -> list[Route]:
    """The probe routes every process serves."""
    return [
        Route("/health", health, methods=["GET"]),
        Route("/metrics", scrape, methods=["GET"]),
    ]
