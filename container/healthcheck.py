"""The image's HEALTHCHECK: exit 0 when the process in this container answers ``/health`` 200.

``serve`` answers on ``[http] port`` (8080), ``worker`` on ``[worker] port`` (8081);
the ports come from ``TRANSCRIBER_HTTP_PORT`` and ``TRANSCRIBER_WORKER_PORT`` when set.
A port nobody listens on is passed over; the check passes only when at least one
answered and every one that answered said 200. So it fails when nothing serves,
and when the service answers 503 (a service condition, the database unreachable).
Standard library only: it runs once every interval, and must start fast.
"""

from __future__ import annotations

import http.client
import os
import sys

TIMEOUT_SECONDS = 4.0


def _status(port: int) -> int | None:
    """The status ``GET /health`` answered on ``port``; None when nothing listens there."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=TIMEOUT_SECONDS)
    try:
        connection.request("GET", "/health")
        return connection.getresponse().status
    except ConnectionRefusedError:
        return None
    finally:
        connection.close()


def main() -> int:
    """Probe both ports; the exit status HEALTHCHECK reads (0 healthy, 1 unhealthy)."""
    ports = {
        int(os.environ.get("TRANSCRIBER_HTTP_PORT", "8080")),
        int(os.environ.get("TRANSCRIBER_WORKER_PORT", "8081")),
    }
    answers = {}
    for port in sorted(ports):
        try:
            status = _status(port)
        except OSError as exc:  # a timeout, a reset: the process is there and not well
            print(f"healthcheck: port {port}: {exc.__class__.__name__}", file=sys.stderr)  # noqa: T201
            return 1
        if status is not None:
            answers[port] = status
    if not answers:
        print("healthcheck: nothing answers on ports " + ", ".join(map(str, sorted(ports))))  # noqa: T201
        return 1
    bad = {port: status for port, status in answers.items() if status != 200}
    for port, status in bad.items():
        print(f"healthcheck: port {port}: /health answered {status}")  # noqa: T201
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
