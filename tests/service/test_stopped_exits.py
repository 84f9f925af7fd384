"""A stopped ``serve`` exits promptly even when a thread it left is blocked for good.

After ``service.stopped``, closing the event loop waits for leftover tasks and
executor threads, and the interpreter's exit joins every ``concurrent.futures``
thread. A thread blocked on a socket to a peer that never answers (an S3 or a
PostgreSQL gone mid-call) would keep the stopped process alive forever. The
process here gets such a thread at start-up (a ``sitecustomize`` on its
``PYTHONPATH`` submits a ``recv`` on a socket the test accepts and never
answers), then SIGTERM: it must exit, with status 0, within the bound.
"""

from __future__ import annotations

import signal
import socket
import subprocess
import textwrap
import time
from pathlib import Path

import pytest

from tests.support.service import running_service
from transcriber_app.cli import EXIT_SECONDS

pytestmark = pytest.mark.timeout(120)

GRACE = 1.0
HARD = 3.0
#: SIGTERM to exit: the hard timeout, the bounded exit, and slack for a loaded box.
EXIT_WITHIN = HARD + EXIT_SECONDS + 5.0

SITECUSTOMIZE = """
import concurrent.futures, os, socket

_peer = socket.create_connection(("127.0.0.1", int(os.environ["SILENT_PEER_PORT"])))
_pool = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="silent-peer")
_pool.submit(_peer.recv, 1)
"""


def test_a_thread_blocked_on_a_silent_peer_does_not_keep_a_stopped_serve_alive(
    tmp_path: Path,
) -> None:
    """SIGTERM with a thread stuck in recv: serve logs service.stopped, then exits 0 in time."""
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    (hooks / "sitecustomize.py").write_text(textwrap.dedent(SITECUSTOMIZE), encoding="utf-8")
    with socket.create_server(("127.0.0.1", 0)) as silent:
        env = {"PYTHONPATH": str(hooks), "SILENT_PEER_PORT": str(silent.getsockname()[1])}
        config = {"shutdown": {"grace_seconds": GRACE, "hard_seconds": HARD}}
        with running_service(tmp_path / "serve", config=config, env=env) as service:
            accepted, _ = silent.accept()
            with accepted:
                signalled = time.monotonic()
                service.process.send_signal(signal.SIGTERM)
                try:
                    code = service.process.wait(EXIT_WITHIN)
                except subprocess.TimeoutExpired:
                    code = None
                took = time.monotonic() - signalled
                assert code == 0, f"exit {code} after {took:.1f} s:\n{service.logs()}"
                assert "service.stopped" in service.logs()
                assert "service.exit_forced" in service.logs()
                assert "silent-peer" in service.wait_for_log("service.exit_forced")
