"""Structured logs: one ``key=value`` line per event on stderr (reference: Privacy, Configuration).

Code logs an event name as the message and its facts as ``extra``; this
formatter prints them. What may be logged is decided where the event is
logged: job id, state, extension, size — never a sender's name, a file
name, a stored name, an object key or a URL.
"""

from __future__ import annotations

import logging
import sys
from datetime import UTC, datetime
from typing import Any, TextIO

#: Attributes every LogRecord has; anything else came in through ``extra``.
_STANDARD = frozenset(vars(logging.makeLogRecord({}))) | {
    "message",
    "asctime",
    "taskName",
    "color_message",  # uvicorn's duplicate of the message with terminal colours
}


def _quote(value: Any) -> str:
    text = str(value)
    if text and not any(c in text for c in ' "=\\\n\t'):
        return text
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{escaped}"'


class KeyValueFormatter(logging.Formatter):
    """``ts=… level=… logger=… event=… key=value …``; exceptions by type only."""

    def format(self, record: logging.LogRecord) -> str:
        """One line for one record."""
        moment = datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds")
        parts = [
            f"ts={moment}",
            f"level={record.levelname.lower()}",
            f"logger={record.name}",
            f"event={_quote(record.getMessage())}",
        ]
        parts.extend(
            f"{key}={_quote(value)}"
            for key, value in vars(record).items()
            if key not in _STANDARD and not key.startswith("_")
        )
        if record.exc_info and record.exc_info[0] is not None:
            # The type only: exception texts from libraries may carry paths and URLs.
            parts.append(f"exc_type={record.exc_info[0].__name__}")
        return " ".join(parts)


def configure_logging(level: int = logging.INFO, stream: TextIO | None = None) -> None:
    """Send every logger's records to stderr as key=value lines."""
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(KeyValueFormatter())
    root = logging.getLogger()
    for existing in list(root.handlers):
        root.removeHandler(existing)
    root.addHandler(handler)
    root.setLevel(level)
    # Third-party loggers that would print request lines with URLs or paths.
    # botocore's debug lines carry full URLs with object keys (reference: Privacy).
    for noisy in (
        "uvicorn.access",
        "aiogram.event",
        "botocore",
        "aiobotocore",
        "urllib3",
        "httpx",
        # The language model's client: whatever it may log at DEBUG of a request carries a
        # transcript (SPEC §27).
        "openai",
    ):
        logging.getLogger(noisy).setLevel(logging.WARNING)
