"""/metrics counts a step's waits for a service condition apart from its retries (ADR 43)."""

from __future__ import annotations

import logging

from transcriber_app.web.metrics import Metrics


def _record(event: str, **extra: object) -> logging.LogRecord:
    record = logging.LogRecord(
        "transcriber.worker", logging.WARNING, __file__, 1, event, None, None
    )
    record.__dict__.update(extra)
    return record


def test_a_wait_for_an_outage_counts_as_kind_wait_not_retry() -> None:
    """step.service_condition is kind "wait" (no attempt spent); step.retry stays "retry"."""
    metrics = Metrics()
    metrics.observe(
        _record("step.service_condition", state="recognize", code="recognizer_unavailable")
    )
    metrics.observe(
        _record("step.service_condition", state="recognize", code="storage_unavailable")
    )
    metrics.observe(_record("step.retry", state="recognize"))
    text = metrics.exposition().decode()
    assert 'transcriber_step_failures_total{kind="wait",state="recognize"} 2.0' in text
    assert 'transcriber_step_failures_total{kind="retry",state="recognize"} 1.0' in text
