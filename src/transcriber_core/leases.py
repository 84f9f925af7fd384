"""Running leased work: its lease renewed while it runs, its time bounded (ADR 6, 52, 83).

A job's step, a part's and a summary's run the same way, so the way is
written once: ``renewed`` renews the holder's lease every ``lease_renewal``
and cancels the work when the lease is lost; ``bounded`` ends it at its
ceiling as ``StepTimedOut``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Coroutine
from datetime import timedelta
from typing import Any, TypeVar

from transcriber_core.errors import LeaseLost, StepTimedOut

T = TypeVar("T")

log = logging.getLogger("transcriber.worker")


async def renewed(
    work: Coroutine[Any, Any, T],
    renew: Callable[[], Awaitable[None]],
    *,
    every: timedelta,
    job_id: str,
) -> T:
    """``work``'s result, ``renew`` called every ``every`` meanwhile.

    ``renew`` raising ``LeaseLost`` cancels the work and raises it; any other
    failure to renew is logged and tried again at the next interval (the
    lease may still hold). The work is cancelled, and waited for, whenever
    this returns early.
    """
    step = asyncio.create_task(work)
    try:
        while True:
            done, _ = await asyncio.wait({step}, timeout=every.total_seconds())
            if done:
                return step.result()
            try:
                await renew()
            except LeaseLost:
                raise
            except Exception as exc:  # noqa: BLE001 - the lease may still hold; try again later
                log.warning(
                    "lease.renew_error", extra={"job_id": job_id, "error_type": type(exc).__name__}
                )
    finally:
        if not step.done():
            step.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await step


async def bounded(work: Awaitable[T], ceiling: timedelta, *, past: str) -> T:
    """``work``'s result, or ``StepTimedOut(past)`` once it has run for ``ceiling``."""
    try:
        async with asyncio.timeout(ceiling.total_seconds()) as deadline:
            return await work
    except TimeoutError:
        if deadline.expired():
            raise StepTimedOut(past) from None
        raise
