"""Blocking work in threads that cancellation waits for (transcriber_adapters._threads)."""

from __future__ import annotations

import asyncio
import threading

import pytest

from transcriber_adapters._threads import close, in_thread


class Handle:
    """Something a thread opened, that knows whether it was closed."""

    def __init__(self) -> None:
        self.closed = False

    def close(self) -> None:
        self.closed = True


async def test_result_of_a_cancelled_call_is_released() -> None:
    """A file the thread opened after its caller was cancelled is closed, not leaked."""
    entered, proceed = threading.Event(), threading.Event()
    handle = Handle()

    def slow_open() -> Handle:
        entered.set()
        proceed.wait(5)
        return handle

    call = asyncio.create_task(in_thread(slow_open, release=close))
    await asyncio.to_thread(entered.wait, 5)
    call.cancel()
    proceed.set()
    with pytest.raises(asyncio.CancelledError):
        await call
    assert handle.closed


async def test_cancellation_waits_for_the_thread_and_sets_stop() -> None:
    """A cancelled call asks the work to stop and returns only once the thread has ended."""
    stop = threading.Event()
    finished = threading.Event()
    started = threading.Event()

    def copy_until_stopped() -> None:
        started.set()
        stop.wait(5)
        finished.set()

    call = asyncio.create_task(in_thread(copy_until_stopped, stop=stop))
    await asyncio.to_thread(started.wait, 5)
    call.cancel()
    with pytest.raises(asyncio.CancelledError):
        await call
    assert stop.is_set()
    assert finished.is_set()


async def test_result_is_returned_untouched() -> None:
    """Without cancellation the caller gets the result and release is never called."""
    handle = Handle()
    assert await in_thread(lambda: handle, release=close) is handle
    assert not handle.closed
