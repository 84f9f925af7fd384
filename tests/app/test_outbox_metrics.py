"""/metrics counts the outbox and summaries from log events, and deliveries pending from the DB."""

from __future__ import annotations

import logging

from transcriber_app.web.metrics import Metrics
from transcriber_core.entities import DeliveryKind
from transcriber_core.policy import chat_pace


def _record(event: str, **extra: object) -> logging.LogRecord:
    record = logging.LogRecord("transcriber.outbox", logging.INFO, __file__, 1, event, None, None)
    record.__dict__.update(extra)
    return record


def test_delivery_outcomes_are_counted_by_kind() -> None:
    """Sent, retried and given-up deliveries each count under their kind."""
    metrics = Metrics()
    metrics.observe(_record("delivery.retry", kind="webhook"))
    metrics.observe(_record("delivery.given_up", kind="webhook"))
    metrics.observe(_record("delivery.sent", kind="notice"))
    metrics.observe(_record("delivery.sent", kind="bogus"))
    text = metrics.exposition().decode()
    assert 'transcriber_deliveries_total{kind="webhook",outcome="given_up"} 1.0' in text
    assert 'transcriber_deliveries_total{kind="webhook",outcome="retry"} 1.0' in text
    assert 'transcriber_deliveries_total{kind="notice",outcome="sent"} 1.0' in text
    assert "bogus" not in text


def test_pending_deliveries_are_shown_per_kind() -> None:
    """The pending gauge shows every kind, 0 for those with none."""
    metrics = Metrics()
    metrics.set_deliveries({DeliveryKind.WEBHOOK: 3})
    text = metrics.exposition().decode()
    assert 'transcriber_deliveries_pending{kind="webhook"} 3.0' in text
    assert 'transcriber_deliveries_pending{kind="notice"} 0.0' in text


def test_a_chats_edit_pace_is_no_metric() -> None:
    """Budget levels are shown, but not the per-chat edit paces: they would name chats (ADR 51)."""
    metrics = Metrics()
    metrics.set_budgets({"speechkit.sync": 3.0, chat_pace(123456789): 0.0})
    text = metrics.exposition().decode()
    assert 'budget="speechkit.sync"' in text
    assert "123456789" not in text


def test_summary_outcomes_are_counted() -> None:
    """Each summary event counts under its outcome; the others start at 0."""
    metrics = Metrics()
    metrics.observe(_record("summary.retry", job_id="j"))
    metrics.observe(_record("summary.retry", job_id="j"))
    metrics.observe(_record("summary.done", job_id="j"))
    metrics.observe(_record("summary.start", job_id="j"))
    text = metrics.exposition().decode()
    assert 'transcriber_summaries_total{outcome="retry"} 2.0' in text
    assert 'transcriber_summaries_total{outcome="done"} 1.0' in text
    assert 'transcriber_summaries_total{outcome="dead"} 0.0' in text
