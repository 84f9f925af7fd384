"""What the service-condition checks cost on the hot paths (ADR 20).

1. ``ConditionStore.clear`` after every finished step, when nothing holds
   (the usual case: one read, no write), and when a condition holds (read
   and delete), on a real SQLite file.
2. ``current`` as ``/health`` calls it.
3. ``free_bytes`` (one statvfs) as every upload and health probe calls it.

Usage: .venv/bin/python bench/conditions.py [--rounds 5000]
"""

from __future__ import annotations

import sys
from pathlib import Path

# bench/queue.py would shadow the stdlib ``queue`` that sqlite's thread imports.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]

import argparse
import asyncio
import tempfile
import time
from datetime import timedelta

from transcriber_adapters.sqlite import SqliteConditionStore, SqliteJobRepository
from transcriber_adapters.system import free_bytes

CODES = frozenset({"disk_full"})
SCOPES = frozenset({"host-a", ""})


async def _per_call(label: str, rounds: int, call: object) -> None:
    started = time.perf_counter()
    for _ in range(rounds):
        await call()  # type: ignore[operator]
    micros = (time.perf_counter() - started) / rounds * 1e6
    print(f"{label:<48} {micros:8.1f} µs/call  ({rounds} calls)")


async def main(rounds: int) -> None:
    """Print the figures."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "transcriber.db"
        repo = await SqliteJobRepository.open(path)
        store = await SqliteConditionStore.open(path)
        try:
            await _per_call(
                "clear, nothing holds (read only)",
                rounds,
                lambda: store.clear(CODES, scopes=SCOPES),
            )

            async def report_then_clear() -> None:
                await store.report("disk_full", scope="host-a", message="m")
                await store.clear(CODES, scopes=SCOPES)

            await _per_call("report + clear (two writes)", rounds // 5, report_then_clear)
            await _per_call(
                "current, as /health reads it",
                rounds,
                lambda: store.current(scopes=SCOPES, within=timedelta(minutes=5)),
            )

            async def statvfs() -> None:
                free_bytes(Path(folder))

            await _per_call("free_bytes (one statvfs)", rounds, statvfs)
        finally:
            await store.close()
            await repo.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=5000)
    asyncio.run(main(parser.parse_args().rounds))
