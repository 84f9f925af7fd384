"""Blocking work in a thread that a cancellation waits for instead of abandoning.

``asyncio.to_thread`` gives up on its thread when the awaiting task is
cancelled, but the thread goes on: a copy keeps writing, or renames its file
into place, after the caller was told it had stopped. ``in_thread`` asks the
work to stop and waits until it has, so its cleanup is done before the
cancellation propagates. ``wait_out`` is the core's (``transcriber_core.tasks``).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import Protocol, TypeVar, TypeVarTuple

from transcriber_core.tasks import wait_out

T = TypeVar("T")
Ts = TypeVarTuple("Ts")


async def in_thread(
    function: Callable[[*Ts], T],
    *args: *Ts,
    stop: threading.Event | None = None,
    release: Callable[[T], object] | None = None,
) -> T:
    """Run ``function(*args)`` in a thread; on cancellation set ``stop`` and wait for it to end.

    ``function`` should look at ``stop`` between slices of long work (a
    chunk of a copy) and clean up after itself when it is set. ``release``
    is called with a result nobody will receive because the caller was
    cancelled meanwhile (``close`` for a file the thread opened).
    """
    future = asyncio.ensure_future(asyncio.to_thread(function, *args))
    try:
        return await asyncio.shield(future)
    except asyncio.CancelledError:
        if stop is not None:
            stop.set()
        await wait_out(future)
        if release is not None and not future.cancelled() and future.exception() is None:
            release(future.result())
        raise


class _Closable(Protocol):
    def close(self) -> object: ...


def close(resource: _Closable) -> None:
    """Close what a thread opened for a caller that is gone; for ``in_thread(release=...)``."""
    resource.close()
