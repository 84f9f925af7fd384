"""The ``summaries`` columns and rows, shared by the SQLite and PostgreSQL stores (ADR 83)."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

from transcriber_core.summaries import Action, Summary, SummaryState

#: The columns a summary is read from, in ``summary_from_row``'s order.
SUMMARY_COLUMNS = (
    "job_id, state, text, points, actions, model, prompt_version, source, error, attempts,"
    " acquisition_id, acquire_time, delay_time, requested, created"
)


def summary_from_row(row: Sequence[Any], from_db: Callable[[Any], datetime]) -> Summary:
    """The summary of a row of ``SUMMARY_COLUMNS``; times through the store's ``from_db``."""
    (
        job_id,
        state,
        text,
        points,
        actions,
        model,
        prompt_version,
        source,
        error,
        attempts,
        acquisition_id,
        acquire_time,
        delay_time,
        requested,
        created,
    ) = row
    return Summary(
        job_id=job_id,
        state=SummaryState(state),
        text=text,
        points=tuple(json.loads(points)),
        actions=tuple(Action(text=a["text"], who=a.get("who")) for a in json.loads(actions)),
        model=model,
        prompt_version=prompt_version,
        source=source,
        error=error,
        attempts=attempts,
        acquisition_id=acquisition_id,
        acquire_time=None if acquire_time is None else from_db(acquire_time),
        delay_time=None if delay_time is None else from_db(delay_time),
        requested=from_db(requested),
        created=None if created is None else from_db(created),
    )


def summary_params(summary: Summary, to_db: Callable[[datetime], Any]) -> dict[str, Any]:
    """The work fields of ``summary`` as statement parameters; times through ``to_db``."""
    return {
        "job_id": summary.job_id,
        "state": summary.state.value,
        "text": summary.text,
        "points": json.dumps(list(summary.points), ensure_ascii=False),
        "actions": json.dumps(
            [{"text": a.text, "who": a.who} for a in summary.actions], ensure_ascii=False
        ),
        "model": summary.model,
        "prompt_version": summary.prompt_version,
        "source": summary.source,
        "error": summary.error,
        "attempts": summary.attempts,
        "new_holder": summary.acquisition_id,
        "own_delay": None if summary.delay_time is None else to_db(summary.delay_time),
        "created": None if summary.created is None else to_db(summary.created),
    }
