"""NOTIFY to ``notify(state)``: how soon a PostgreSQL wake-up reaches a listening process (ADR 32).

A ``PostgresWakeupFeed`` listens on its own connection, the sender on
another. The sender runs
``SELECT pg_notify('transcriber_wakeup', 'convert')`` one at a time; the
figure is the time from just before the sender's statement to the feed's
call of ``notify``, over ``--count`` wake-ups. Both sides run in one event
loop, so the figure includes the sender's own round trip.

Usage: .venv/bin/python bench/pg_wakeups.py [--url postgresql://postgres@127.0.0.1/postgres]
       [--count 500]
"""

from __future__ import annotations

import sys
from pathlib import Path

# bench/queue.py would shadow the stdlib ``queue`` that psycopg imports.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]

import argparse
import asyncio
import os
import statistics
import time

import psycopg

from transcriber_adapters.postgres import WAKEUP_CHANNEL, PostgresWakeupFeed
from transcriber_core.entities import State


async def measure(url: str, count: int) -> list[float]:
    """Milliseconds from each send to its ``notify`` call."""
    arrived: asyncio.Queue[float] = asyncio.Queue()

    def notify(state: State) -> None:
        if state is State.CONVERT:
            arrived.put_nowait(time.perf_counter())

    feed = PostgresWakeupFeed(url)
    task = asyncio.create_task(feed.listen(notify))
    try:
        await arrived.get()  # the wake-up of every step the feed sends once it listens
        latencies: list[float] = []
        async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
            for _ in range(count):
                sent = time.perf_counter()
                await conn.execute("SELECT pg_notify(%s, 'convert')", (WAKEUP_CHANNEL,))
                latencies.append((await arrived.get() - sent) * 1000)
        return latencies
    finally:
        task.cancel()


def main() -> None:
    """Print p50, p95 and max of the wake-up latency."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--url",
        default=os.environ.get(
            "TRANSCRIBER_TEST_DATABASE_URL", "postgresql://postgres@127.0.0.1:5432/postgres"
        ),
    )
    parser.add_argument("--count", type=int, default=500)
    args = parser.parse_args()
    latencies = sorted(asyncio.run(measure(args.url, args.count)))
    p95 = latencies[int(len(latencies) * 0.95) - 1]
    print(
        f"{args.count} wake-ups: p50 {statistics.median(latencies):.2f} ms,"
        f" p95 {p95:.2f} ms, max {latencies[-1]:.2f} ms"
    )


if __name__ == "__main__":
    main()
