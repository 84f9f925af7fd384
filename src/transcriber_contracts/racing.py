"""Races in real threads for the contract suites: each racer its own event loop, all at once."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Coroutine
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

T = TypeVar("T")


def in_threads(
    count: int, racer: Callable[[int, Callable[[], object]], Coroutine[Any, Any, T]]
) -> list[T]:
    """Run ``racer(n, ready)`` in ``count`` real threads, each with its own loop; results in order.

    Each racer sets itself up (opens its own store), then calls ``ready()``:
    a barrier lets every racer go on from there at once. A racer's exception
    is raised here once every thread has ended.
    """
    barrier = threading.Barrier(count)

    def one(n: int) -> T:
        return asyncio.run(racer(n, barrier.wait))

    with ThreadPoolExecutor(count) as pool:
        return list(pool.map(one, range(count)))
