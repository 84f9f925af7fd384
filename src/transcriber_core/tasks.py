"""Waiting out work that must not be left running when its caller is cancelled."""

from __future__ import annotations

import asyncio
from typing import Any


async def wait_out(future: asyncio.Future[Any]) -> None:
    """Wait until ``future`` is done, even through cancellations, then pass any on.

    Used on the way out of a failed or cancelled operation, to finish the
    one piece of work that must not be left running (a thread, a child
    process). The future's own outcome is dropped: the caller is already
    raising something else.
    """
    cancelled = False
    while not future.done():
        try:
            await asyncio.wait({future})
        except asyncio.CancelledError:
            cancelled = True
    if not future.cancelled():
        future.exception()  # mark it retrieved; the caller reports its own error
    if cancelled:
        raise asyncio.CancelledError
