"""``GET /metrics``: Prometheus text exposition of the queue and the pipeline (reference: HTTP API).

Two kinds of series (ADR 14, 38):

* **The queue, shared by every process**: jobs by state, queue depth,
  SpeechKit budget levels and the service conditions that hold. They are
  read from the database (at most once every 5 s per process, ``probes``),
  so ``serve`` and every ``worker`` on the same database report the same
  numbers.
* **Events of this process**: acquires, step durations and failures, HTTP
  uploads, SpeechKit requests, deliveries and summaries. The core has no metrics hooks: these are
  derived from the structured log events the process emits (``step.start``,
  ``step.end``, ``step.retry``, ``step.failed``, ``job.dead``,
  ``speechkit.request``) by a logging handler on the ``transcriber`` logger.
  Each process counts its own; sum them across processes in Prometheus.

Each ``Metrics`` has its own registry, so two apps in one process (tests)
never share or clash on a series.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterable, Iterator, Mapping

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.exposition import CONTENT_TYPE_LATEST, generate_latest

from transcriber_core.entities import STEP_STATES, Condition, DeliveryKind, State
from transcriber_core.policy import PRIVATE_BUDGET_PREFIXES

#: The logger whose records carry the worker's events (every ``transcriber.*`` logger).
EVENTS_LOGGER = "transcriber"
#: Step durations span milliseconds (memory) to hours (an 8-hour conversion).
DURATION_BUCKETS = (
    0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600,
    1800, 3600, 7200, 14400, 28800,
)  # fmt: skip
#: Failure kinds by event: a retry pause, a job judged for good, a job given up on, and a
#: wait for a service condition (an outage, a full disk, a refused key: no attempt spent).
_FAILURE_EVENTS = {
    "step.retry": "retry",
    "step.failed": "failed",
    "job.dead": "dead",
    "step.service_condition": "wait",
}
_STATES = frozenset(state.value for state in State)
#: Outcomes of a delivery by the outbox's event (ADR 35).
_DELIVERY_EVENTS = {
    "delivery.sent": "sent",
    "delivery.retry": "retry",
    "delivery.given_up": "given_up",
}
_DELIVERY_KINDS = frozenset(kind.value for kind in DeliveryKind)
#: Outcomes of a summary's attempt by its event (ADR 83).
_SUMMARY_EVENTS = {
    "summary.done": "done",
    "summary.retry": "retry",
    "summary.failed": "failed",
    "summary.dead": "dead",
}


class Metrics:
    """The service's metrics in their own registry, and the handler that feeds them."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self.jobs = Gauge(
            "transcriber_jobs",
            "Jobs in each state, read from the database (at most 5 s old).",
            ["state"],
            registry=self.registry,
        )
        self.queue_depth = Gauge(
            "transcriber_queue_depth",
            "Jobs waiting for or running a step (convert, recognize, check).",
            registry=self.registry,
        )
        self.conditions = Gauge(
            "transcriber_service_conditions",
            "1 for each service condition that holds (read from the database, at most 5 s old),"
            " by code; none while healthy.",
            ["code"],
            registry=self.registry,
        )
        self.acquires = Counter(
            "transcriber_acquires",
            "Jobs leased by this process, by the state acquired in (including jobs then marked"
            " dead).",
            ["state"],
            registry=self.registry,
        )
        self.step_seconds = Histogram(
            "transcriber_step_duration_seconds",
            "Time a step ran in this process, by the state it worked on.",
            ["state"],
            buckets=DURATION_BUCKETS,
            registry=self.registry,
        )
        self.failures = Counter(
            "transcriber_step_failures",
            "Step failures in this process by state and kind: retry (paused), failed (for good),"
            " dead (gave up), wait (a service condition, no attempt spent).",
            ["state", "kind"],
            registry=self.registry,
        )
        self.uploads = Counter(
            "transcriber_uploads",
            "HTTP uploads by outcome: accepted, duplicate, or the error code that refused them.",
            ["outcome"],
            registry=self.registry,
        )
        self.upload_bytes = Counter(
            "transcriber_upload_bytes",
            "Recording bytes received by accepted HTTP uploads.",
            registry=self.registry,
        )
        self.budget_tokens = Gauge(
            "transcriber_speechkit_budget_tokens",
            "Tokens left in each SpeechKit request budget, shared by every process (from the DB).",
            ["budget"],
            registry=self.registry,
        )
        self.speechkit_requests = Counter(
            "transcriber_speechkit_requests",
            "SpeechKit requests of this process by API (sync, start, check) and outcome"
            " (ok, paced: held back by a budget, error, or the HTTP status).",
            ["api", "outcome"],
            registry=self.registry,
        )
        self.speechkit_audio = Counter(
            "transcriber_speechkit_audio_seconds",
            "Seconds of audio this process sent to SpeechKit, by API: a proxy for the bill.",
            ["api"],
            registry=self.registry,
        )
        self.deliveries = Counter(
            "transcriber_deliveries",
            "Outbox deliveries tried by this process, by kind (webhook, notice) and outcome"
            " (sent, retry, given_up: refused for good or still failing after 24 h).",
            ["kind", "outcome"],
            registry=self.registry,
        )
        self.deliveries_pending = Gauge(
            "transcriber_deliveries_pending",
            "Outbox deliveries waiting or running, by kind, from the database (at most 5 s old).",
            ["kind"],
            registry=self.registry,
        )
        self.summaries = Counter(
            "transcriber_summaries",
            "Summary attempts of this process by outcome: done, retry (the model server failed"
            " for now), failed (refused for good), dead (given up after the attempt limit).",
            ["outcome"],
            registry=self.registry,
        )
        for outcome in _SUMMARY_EVENTS.values():
            self.summaries.labels(outcome)
        self.summaries_pending = Gauge(
            "transcriber_summaries_pending",
            "Summaries asked for and neither built nor given up on, from the database (at most"
            " 5 s old; with [llm] only).",
            registry=self.registry,
        )
        for kind in _DELIVERY_KINDS:
            self.deliveries_pending.labels(kind)
            for outcome in _DELIVERY_EVENTS.values():
                self.deliveries.labels(kind, outcome)
        for state in STEP_STATES:
            self.acquires.labels(state.value)
            self.step_seconds.labels(state.value)
            for kind in _FAILURE_EVENTS.values():
                self.failures.labels(state.value, kind)
        self.handler = _EventHandler(self)

    def observe(self, record: logging.LogRecord) -> None:
        """Count one worker, summary or SpeechKit event; records of any other event are ignored."""
        event = record.msg
        if event == "speechkit.request":
            self._observe_speechkit(record)
            return
        if event in _SUMMARY_EVENTS:
            self.summaries.labels(_SUMMARY_EVENTS[event]).inc()
            return
        if event in _DELIVERY_EVENTS:
            kind = getattr(record, "kind", None)
            if kind in _DELIVERY_KINDS:
                self.deliveries.labels(kind, _DELIVERY_EVENTS[event]).inc()
            return
        state = getattr(record, "state", None)
        if state not in _STATES:
            return
        if event == "step.start":
            self.acquires.labels(state).inc()
        elif event == "step.end":
            seconds = getattr(record, "seconds", None)
            if isinstance(seconds, int | float):
                self.step_seconds.labels(state).observe(seconds)
        elif event in _FAILURE_EVENTS:
            self.failures.labels(state, _FAILURE_EVENTS[event]).inc()
            if event == "job.dead":
                # The acquire that found the job exhausted starts no step.
                self.acquires.labels(state).inc()

    def _observe_speechkit(self, record: logging.LogRecord) -> None:
        api, outcome = getattr(record, "api", None), getattr(record, "outcome", None)
        if not isinstance(api, str) or not isinstance(outcome, str):
            return
        self.speechkit_requests.labels(api, outcome).inc()
        seconds = getattr(record, "audio_seconds", None)
        if isinstance(seconds, int | float) and outcome == "ok" and seconds >= 0:
            self.speechkit_audio.labels(api).inc(seconds)

    def set_budgets(self, levels: Mapping[str, float]) -> None:
        """Record the budget levels read from the database for this scrape.

        A chat's edit pace and a person's questions (``PRIVATE_BUDGET_PREFIXES``)
        are left out: they would name the chat or the person, one series each.
        """
        for name, tokens in levels.items():
            if not name.startswith(PRIVATE_BUDGET_PREFIXES):
                self.budget_tokens.labels(name).set(tokens)

    def set_deliveries(self, counts: Mapping[DeliveryKind, int]) -> None:
        """Record the outbox's pending deliveries read from the repository for this scrape."""
        for kind in DeliveryKind:
            self.deliveries_pending.labels(kind.value).set(counts.get(kind, 0))

    def set_conditions(self, held: Iterable[Condition]) -> None:
        """Record the conditions read for this scrape; a code that cleared leaves the series."""
        self.conditions.clear()
        for condition in held:
            self.conditions.labels(condition.code).set(1)

    def set_jobs(self, counts: Mapping[State, int]) -> None:
        """Record the job counts read from the repository for this scrape."""
        for state in State:
            self.jobs.labels(state.value).set(counts.get(state, 0))
        self.queue_depth.set(sum(counts.get(state, 0) for state in STEP_STATES))

    def exposition(self) -> bytes:
        """The text exposition of every metric."""
        return generate_latest(self.registry)

    @contextlib.contextmanager
    def watching(self, logger_name: str = EVENTS_LOGGER) -> Iterator[None]:
        """Count the worker's events while the block runs.

        ``step.start`` and ``step.end`` are logged at INFO: with the
        ``transcriber`` loggers set above INFO, acquires and durations stop
        counting (failures, logged at WARNING, go on).
        """
        logger = logging.getLogger(logger_name)
        logger.addHandler(self.handler)
        try:
            yield
        finally:
            logger.removeHandler(self.handler)


class _EventHandler(logging.Handler):
    """Feeds worker log records to ``Metrics.observe``; never formats or writes anything."""

    def __init__(self, metrics: Metrics) -> None:
        super().__init__(logging.INFO)
        self.metrics = metrics

    def emit(self, record: logging.LogRecord) -> None:
        """Count the record; a failure here must never disturb the code that logged."""
        try:
            self.metrics.observe(record)
        except Exception:  # noqa: BLE001 - logging must not raise into the worker
            self.handleError(record)


#: The ``Content-Type`` of the exposition.
CONTENT_TYPE = CONTENT_TYPE_LATEST
