"""The service's process gives NumPy's OpenBLAS no thread pool, so a fork cannot hang it (ADR 95).

OpenBLAS's pool has a fork handler that waits for the pool, and a call in
flight on another thread held it: a ``transcriber serve`` that started
ffmpeg to cut a part while a Whisper thread computed features hung for
good, its event loop too (``py-spy dump``: the main thread in
``blas_thread_shutdown_`` under ``create_subprocess_exec``, a Whisper
thread in a NumPy product). ``import transcriber_app`` sets
``OPENBLAS_NUM_THREADS=1`` before NumPy loads, even over an operator's
value: OpenBLAS then starts no thread at all, and its fork handler has
nothing to wait for.
"""

from __future__ import annotations

import os
import subprocess
import sys

#: What the child runs: ``transcriber_app`` first, as the service's entry does, then a
#: product big enough for OpenBLAS to share among its threads, then its threads counted.
CHILD = """
import os
os.environ["OPENBLAS_NUM_THREADS"] = "4"
import transcriber_app
import numpy
a = numpy.ones((512, 512), dtype=numpy.float32)
assert float((a @ a)[0, 0]) == 512.0
print(os.environ["OPENBLAS_NUM_THREADS"], len(os.listdir("/proc/self/task")))
"""


def test_numpy_runs_without_a_blas_thread_pool() -> None:
    """After ``import transcriber_app`` a product runs on the caller's thread: one thread in all."""
    env = {key: value for key, value in os.environ.items() if key != "OPENBLAS_NUM_THREADS"}
    done = subprocess.run(
        [sys.executable, "-c", CHILD],
        check=False,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["1", "1"]
