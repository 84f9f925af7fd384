"""What the job repository's role suites share: the suite's times, jobs, files and helpers.

Every role suite (``jobs``, ``queue``, ``file_records``, ``listings``,
``outbox``, ``removals``) takes the fixtures ``repo`` and ``another_repo``
described in ``transcriber_contracts.job_repository``, and its ``clock``
from ``RepositorySuite``.
"""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import Awaitable, Callable, Sequence
from datetime import UTC, datetime, timedelta

import pytest

from transcriber_core.clocks import ManualClock
from transcriber_core.entities import (
    FileRecord,
    Job,
    Location,
    Origin,
    State,
)
from transcriber_core.ports import JobRepository

#: When the suite's jobs are created; odd microseconds catch any lost precision.
T0 = datetime(2026, 3, 1, 12, 0, 0, 123457, tzinfo=UTC)
#: When the suite's workers ask for work.
NOW = T0 + timedelta(minutes=10)
#: A SHA-256 digest as intake stores it: 64 lower-case hex digits.
DIGEST = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
#: The lease the suite's workers use.
LEASE = timedelta(minutes=2)
MICROSECOND = timedelta(microseconds=1)


def new_id(prefix: str = "") -> str:
    """A fresh id as unguessable as a real one, with an optional prefix to fix its order."""
    return f"{prefix}{secrets.token_urlsafe(16)}"


def make_job(*, created: datetime = T0, state: State = State.CONVERT, **changes: object) -> Job:
    """A new job from HTTP in ``state``, created and updated at ``created``."""
    fields: dict[str, object] = {
        "id": new_id(),
        "state": state,
        "origin": Origin.http(),
        "source_file_id": new_id(),
        "created": created,
        "updated": created,
    }
    fields.update(changes)
    return Job(**fields)  # type: ignore[arg-type]


def make_file(*, created: datetime = T0, **changes: object) -> FileRecord:
    """A local file record."""
    fields: dict[str, object] = {
        "id": new_id(),
        "location": Location.LOCAL,
        "size": 1234,
        "extension": ".mp3",
        "created": created,
    }
    fields.update(changes)
    return FileRecord(**fields)  # type: ignore[arg-type]


#: Opens one more independent instance on the database of the suite's ``repo``.
OpenAnother = Callable[[], Awaitable[JobRepository]]


async def create(
    clock: ManualClock, repo: JobRepository, job: Job, files: Sequence[FileRecord] = ()
) -> tuple[Job, bool]:
    """Create ``job`` with the store's clock at ``job.created``, which the store stamps."""
    clock.set(job.created)
    return await repo.create(job, files)


async def acquire(
    clock: ManualClock,
    repo: JobRepository,
    state: State = State.CONVERT,
    *,
    now: datetime = NOW,
    acquisition_id: str | None = None,
    short_only: bool = False,
) -> Job | None:
    """Ask for work the way a worker does, with the store's clock at ``now``."""
    clock.set(now)
    return await repo.acquire(
        state,
        acquisition_id=acquisition_id or new_id("lease-"),
        lease=LEASE,
        short_only=short_only,
    )


async def renew(
    clock: ManualClock, repo: JobRepository, job_id: str, *, acquisition_id: str, now: datetime
) -> None:
    """Renew a lease with the store's clock at ``now``."""
    clock.set(now)
    await repo.renew(job_id, acquisition_id=acquisition_id)


async def position(
    clock: ManualClock,
    repo: JobRepository,
    job_id: str,
    *,
    now: datetime = NOW,
    lease: timedelta = LEASE,
) -> int | None:
    """A job's queue position with the store's clock at ``now``."""
    clock.set(now)
    return await repo.queue_position(job_id, lease=lease)


async def states_ready(
    clock: ManualClock, repo: JobRepository, *, now: datetime = NOW
) -> frozenset[State]:
    """The ready states with the store's clock at ``now``."""
    clock.set(now)
    return (await repo.ready_states(lease=LEASE)).states


async def stored(clock: ManualClock, repo: JobRepository, *jobs: Job) -> list[Job]:
    """Create each job, each at its own ``created``, and return them."""
    for job in jobs:
        await create(clock, repo, job)
    return list(jobs)


async def check_one_winner(clock: ManualClock, racers: Sequence[JobRepository]) -> None:
    """Every instance in ``racers`` asks at once for the one job: exactly one gets it, once.

    Importable so that a test can run it against a deliberately broken
    repository and see it fail: proof the race check can catch a
    non-atomic acquire.
    """
    job = make_job()
    await create(clock, racers[0], job)
    ids = [new_id(f"lease-{n}-") for n in range(len(racers))]
    clock.set(NOW)
    results = await asyncio.gather(
        *(
            racer.acquire(State.CONVERT, acquisition_id=i, lease=LEASE)
            for racer, i in zip(racers, ids, strict=True)
        )
    )
    winners = [result for result in results if result is not None]
    assert len(winners) == 1, f"{len(winners)} acquirers got the one job"
    stored_job = await racers[-1].get(job.id)
    assert stored_job.acquisition_id == winners[0].acquisition_id
    assert stored_job.attempts == 1


class RepositorySuite:
    """The base of each role suite: the store's clock the adapter's fixtures build on."""

    @pytest.fixture
    def clock(self) -> ManualClock:
        """The store's clock; the adapter's fixtures build their repositories on it."""
        return ManualClock(T0)
