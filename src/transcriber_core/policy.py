"""The settings table and the pure decisions made from it: retries, leases, ceilings."""

from __future__ import annotations

from datetime import datetime, timedelta

import attrs

from transcriber_core.entities import State
from transcriber_core.errors import RecordingTooLong


@attrs.frozen(kw_only=True)
class Settings:
    """The numbers of SPEC §3 in one place; names are a contract, values may change."""

    #: Acquires a job may take before the next acquirer marks it dead.
    max_attempts: int = 5
    #: First retry pause; doubles at each further attempt.
    retry_base: timedelta = timedelta(seconds=1)
    #: Longest retry pause.
    retry_cap: timedelta = timedelta(minutes=5)
    #: How long a worker may stay silent before its job is handed out again.
    lease: timedelta = timedelta(minutes=2)
    #: How often a running step renews its lease.
    lease_renewal: timedelta = timedelta(seconds=30)
    #: How long one convert step may run.
    convert_ceiling: timedelta = timedelta(hours=8)
    #: How long one recognize step (upload and start) may run.
    recognize_ceiling: timedelta = timedelta(hours=2)
    #: How long one check step may run.
    check_ceiling: timedelta = timedelta(hours=1)
    #: Wait before the first check, unless the recognizer advises its own.
    first_check_delay: timedelta = timedelta(seconds=10)
    #: Wait between checks, unless the recognizer asks for more.
    check_interval: timedelta = timedelta(seconds=5)
    #: Largest recording accepted, in bytes.
    max_record_bytes: int = 8 * 1024**3
    #: An upload that sends no byte for this long is aborted.
    upload_inactivity_timeout: timedelta = timedelta(minutes=5)
    #: Fallback poll of the queue when nothing woke the workers.
    idle_poll_interval: timedelta = timedelta(seconds=1)
    #: Tries to tell a sender before the notice is given up (logged, not retried later).
    notify_attempts: int = 3
    #: Wait after the first failed try to tell; doubles after each, capped at ``notify_wait_cap``.
    notify_retry_base: timedelta = timedelta(seconds=1)
    #: Longest wait between two tries to tell, even when the notifier asks for more.
    notify_wait_cap: timedelta = timedelta(seconds=30)

    def __attrs_post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ValueError("max_attempts must be at least 1")
        if self.lease_renewal >= self.lease:
            raise ValueError("lease_renewal must be shorter than lease")
        if self.notify_attempts < 1:
            raise ValueError("notify_attempts must be at least 1")

    def ceiling(self, state: State) -> timedelta:
        """How long the step of ``state`` may run before the attempt fails."""
        ceilings = {
            State.CONVERT: self.convert_ceiling,
            State.RECOGNIZE: self.recognize_ceiling,
            State.CHECK: self.check_ceiling,
        }
        return ceilings[state]


DEFAULT_SETTINGS = Settings()


@attrs.frozen(kw_only=True)
class DecodeLimits:
    """How much audio one recording may decode to (SPEC §17 "Decoded size").

    A few kilobytes can declare hours of audio (8-bit PCM at 1 Hz), and
    converting them costs minutes of CPU; no real codec needs fewer than
    ``min_bytes_per_second`` bytes of file per second of sound.
    """

    #: Longest decoded audio accepted from one recording, whatever its size.
    max_duration: timedelta = timedelta(hours=8)
    #: Fewest bytes of file per second of decoded audio; a file with fewer is refused.
    min_bytes_per_second: float = 100.0

    def __attrs_post_init__(self) -> None:
        if self.max_duration <= timedelta(0):
            raise ValueError("max_duration must be positive")
        if self.min_bytes_per_second <= 0:
            raise ValueError("min_bytes_per_second must be positive")

    def allowed_seconds(self, size: int | None) -> float:
        """Seconds of audio a file of ``size`` bytes may decode to; ``None`` is a size unknown."""
        longest = self.max_duration.total_seconds()
        if size is None:
            return longest
        return min(longest, size / self.min_bytes_per_second)

    def refusal(self, seconds: float, size: int | None) -> RecordingTooLong | None:
        """The error that refuses ``seconds`` of audio from ``size`` bytes; None if allowed.

        It names the limit that was passed, so the sender learns why.
        """
        longest = self.max_duration.total_seconds()
        if seconds > longest:
            return RecordingTooLong(
                f"the recording is longer than the limit of {longest:g} seconds"
            )
        if seconds > self.allowed_seconds(size):
            return RecordingTooLong(
                "the recording decodes to more audio than its size allows"
                f" (the limit is {self.min_bytes_per_second:g} bytes per second of audio)"
            )
        return None


DEFAULT_DECODE_LIMITS = DecodeLimits()


def retry_pause(attempts: int, settings: Settings = DEFAULT_SETTINGS) -> timedelta:
    """The pause after the ``attempts``-th failed attempt: ``base * 2^(attempts-1)``, capped."""
    exponent = max(attempts, 1) - 1
    # Past 2^20 the cap has long won; stop before the multiplication overflows.
    if exponent >= 20:
        return settings.retry_cap
    return min(settings.retry_base * (1 << exponent), settings.retry_cap)


def is_exhausted(attempts: int, settings: Settings = DEFAULT_SETTINGS) -> bool:
    """True when a job acquired for the ``attempts``-th time must be marked dead."""
    return attempts > settings.max_attempts


def lease_cutoff(now: datetime, settings: Settings = DEFAULT_SETTINGS) -> datetime:
    """Leases taken or renewed at or before this moment have expired."""
    return now - settings.lease


def next_check_delay(advised: timedelta | None, settings: Settings = DEFAULT_SETTINGS) -> timedelta:
    """The wait before the next check: the recognizer may ask for more, never for less."""
    if advised is None:
        return settings.check_interval
    return max(advised, settings.check_interval)


def first_check_delay(
    advised: timedelta | None, settings: Settings = DEFAULT_SETTINGS
) -> timedelta:
    """The wait before the first check: the recognizer's advice wins when it gives one."""
    return settings.first_check_delay if advised is None else advised
