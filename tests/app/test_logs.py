"""Structured log lines (reference: Privacy, Configuration)."""

from __future__ import annotations

import io
import logging

from transcriber_app.logs import KeyValueFormatter, configure_logging


def record(msg: str, **extra: object) -> logging.LogRecord:
    rec = logging.makeLogRecord({"name": "transcriber.test", "levelname": "INFO", "msg": msg})
    for key, value in extra.items():
        setattr(rec, key, value)
    return rec


def test_event_and_extras_become_key_value_pairs() -> None:
    """One line with the event name and each extra as key=value."""
    line = KeyValueFormatter().format(record("job.accepted", job_id="abc", size=12))
    assert "event=job.accepted" in line
    assert "job_id=abc" in line
    assert "size=12" in line
    assert "\n" not in line


def test_values_with_spaces_and_quotes_are_quoted() -> None:
    """A value with spaces or quotes stays one field."""
    line = KeyValueFormatter().format(record("x", reason='a "b" c'))
    assert 'reason="a \\"b\\" c"' in line


def test_exceptions_are_logged_by_type_only() -> None:
    """An exception's text (which may hold a path) never reaches the line."""
    error = OSError("/data/files/secret-name.mp3: no space")
    rec = record("boom")
    rec.exc_info = (OSError, error, None)
    line = KeyValueFormatter().format(rec)
    assert "exc_type=OSError" in line
    assert "secret-name" not in line


def test_configure_logging_writes_to_the_given_stream() -> None:
    """Records of any logger reach the configured stream as key=value lines."""
    stream = io.StringIO()
    root = logging.getLogger()
    saved = (list(root.handlers), root.level)
    configure_logging(stream=stream)
    try:
        logging.getLogger("transcriber.worker").info("step.start", extra={"job_id": "j1"})
    finally:
        root.handlers[:] = saved[0]
        root.setLevel(saved[1])
    assert "event=step.start" in stream.getvalue()
    assert "job_id=j1" in stream.getvalue()
