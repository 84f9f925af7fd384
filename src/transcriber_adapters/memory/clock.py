"""The memory adapters' clock: the core's ``ManualClock``, moved only when told to."""

from transcriber_core.clocks import EPOCH, ManualClock

__all__ = ["EPOCH", "ManualClock"]
