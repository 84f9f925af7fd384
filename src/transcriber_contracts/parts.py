"""The ``PartQueue`` role: each part of a split recording leased, fenced and retried alone (ADR 52).

Subclass with the fixtures ``repo`` and ``another_repo`` (``job_repository``'s
docstring) and ``open_elsewhere``: a function that, called in any thread's own
event loop, opens one more independent instance on the suite's database and
clock as an async context manager (``ElsewhereOpener``). The race tests run
real threads, each with its own loop and instance, released at once by a
barrier.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from datetime import datetime, timedelta
from typing import TypeVar

import attrs
import pytest

from transcriber_contracts.racing import in_threads
from transcriber_contracts.repository_support import (
    LEASE,
    NOW,
    T0,
    OpenAnother,
    RepositorySuite,
    acquire,
    create,
    make_job,
    new_id,
)
from transcriber_core.clocks import ManualClock
from transcriber_core.entities import Job, JobPart, State, Word
from transcriber_core.errors import LeaseLost
from transcriber_core.ports import JobRepository, PartQueue
from transcriber_core.transitions import transition

#: Opens one more instance on the suite's database in the calling thread's event loop.
ElsewhereOpener = Callable[[], AbstractAsyncContextManager[JobRepository]]

T = TypeVar("T")

#: How long a job waits in check for its parts in this suite before it looks again itself.
WAIT = timedelta(hours=1)


async def split_job(
    clock: ManualClock, repo: JobRepository, parts: int = 3, *, created: datetime = T0
) -> tuple[Job, list[JobPart]]:
    """A job planned into ``parts`` parts and waiting in check for them, as the worker leaves it."""
    job = make_job(state=State.RECOGNIZE, created=created)
    await create(clock, repo, job)
    lease = new_id("plan-")
    clock.set(job.created)
    leased = await repo.acquire(State.RECOGNIZE, acquisition_id=lease, lease=LEASE)
    assert leased is not None
    assert leased.id == job.id
    planned = [
        JobPart(job_id=job.id, index=n, start=10.0 * n, end=10.0 * (n + 1)) for n in range(parts)
    ]
    await repo.save_parts_if_held(job.id, planned, acquisition_id=lease)
    waiting = transition(leased, State.CHECK, now=job.created, delay_until=job.created + WAIT)
    await repo.save_if_held(waiting, acquisition_id=lease, delay=WAIT)
    return await repo.get(job.id), planned


async def take(
    clock: ManualClock,
    parts: PartQueue,
    *,
    now: datetime = NOW,
    acquisition_id: str | None = None,
) -> JobPart | None:
    """Ask for a part the way a worker does, with the store's clock at ``now``."""
    clock.set(now)
    return await parts.acquire_part(acquisition_id=acquisition_id or new_id("part-"), lease=LEASE)


def done(part: JobPart, text: str = "слово") -> JobPart:
    """The part recognised, its lease given back, as the worker saves it."""
    return attrs.evolve(
        part,
        text=text,
        words=(Word(text=text, start=0.25, end=0.75),),
        attempts=0,
        error=None,
        acquisition_id=None,
    )


def race_in_threads(
    opener: ElsewhereOpener, count: int, act: Callable[[JobRepository, int], Awaitable[T]]
) -> list[T]:
    """Run ``act(instance, n)`` in ``count`` real threads at once, each with its own loop.

    Every thread opens its instance first; a barrier then lets all act at once.
    """

    async def one(n: int, ready: Callable[[], object]) -> T:
        async with opener() as instance:
            ready()
            return await act(instance, n)

    return in_threads(count, one)


class PartsContract(RepositorySuite):
    """Subclass and provide ``repo``, ``another_repo`` and ``open_elsewhere`` (module docstring)."""

    # -- taking a part ---------------------------------------------------------

    async def test_no_part_without_split_jobs(
        self, clock: ManualClock, repo: JobRepository
    ) -> None:
        """A queue of whole recordings has no part to hand out."""
        await create(clock, repo, make_job(state=State.CHECK))
        assert await take(clock, repo) is None

    async def test_acquire_leases_the_first_part(
        self, clock: ManualClock, repo: JobRepository
    ) -> None:
        """The first part of the job is leased: the id, the store's now, one attempt."""
        job, planned = await split_job(clock, repo)
        part = await take(clock, repo, acquisition_id="part-lease")
        assert part == attrs.evolve(
            planned[0], acquisition_id="part-lease", acquire_time=NOW, attempts=1
        )
        assert (await repo.get_parts(job.id))[0] == part
        assert (await repo.get(job.id)).acquisition_id is None

    async def test_parts_go_in_job_then_index_order(
        self, clock: ManualClock, repo: JobRepository
    ) -> None:
        """An older job's parts come first, each job's by index."""
        newer, _ = await split_job(clock, repo, 2, created=T0 + timedelta(seconds=1))
        older, _ = await split_job(clock, repo, 2)
        taken = []
        while part := await take(clock, repo):
            taken.append((part.job_id, part.index))
        assert taken == [(older.id, 0), (older.id, 1), (newer.id, 0), (newer.id, 1)]

    async def test_parts_of_a_job_not_waiting_in_check_stay(
        self, clock: ManualClock, repo: JobRepository
    ) -> None:
        """Parts are handed out only while their job waits for them: planned ones, not yet."""
        job = make_job(state=State.RECOGNIZE)
        await create(clock, repo, job)
        leased = await acquire(clock, repo, State.RECOGNIZE, acquisition_id="plan")
        assert leased is not None
        part = JobPart(job_id=job.id, index=0, start=0.0, end=5.0)
        await repo.save_parts_if_held(job.id, [part], acquisition_id="plan")
        assert await take(clock, repo) is None

    async def test_finished_parts_are_never_taken(
        self, clock: ManualClock, repo: JobRepository
    ) -> None:
        """A done part and a part failed for good are not handed out again."""
        _, planned = await split_job(clock, repo, 2)
        first = await take(clock, repo, acquisition_id="a")
        second = await take(clock, repo, acquisition_id="b")
        assert first is not None
        assert second is not None
        await repo.save_part_if_held(done(first), acquisition_id="a")
        failed = attrs.evolve(second, failed=True, error="bad", acquisition_id=None)
        await repo.save_part_if_held(failed, acquisition_id="b")
        assert await take(clock, repo, now=NOW + 2 * LEASE) is None
        assert planned

    # -- leases and fencing ----------------------------------------------------

    async def test_a_live_part_lease_is_not_taken(
        self, clock: ManualClock, repo: JobRepository
    ) -> None:
        """While a part's lease lives, the next taker gets the next part, then nothing."""
        await split_job(clock, repo, 2)
        first = await take(clock, repo)
        second = await take(clock, repo)
        assert first is not None
        assert second is not None
        assert (first.index, second.index) == (0, 1)
        assert await take(clock, repo, now=NOW + LEASE - timedelta(microseconds=1)) is None

    async def test_an_expired_part_lease_lets_another_take_it(
        self, clock: ManualClock, repo: JobRepository
    ) -> None:
        """A part whose holder stopped renewing is taken again once the lease ran out."""
        await split_job(clock, repo, 1)
        first = await take(clock, repo, acquisition_id="old")
        assert first is not None
        again = await take(clock, repo, now=NOW + LEASE, acquisition_id="new")
        assert again is not None
        assert (again.index, again.acquisition_id, again.attempts) == (0, "new", 2)
        assert again.acquire_time == NOW + LEASE

    async def test_a_stale_fencing_token_cannot_save_or_renew(
        self, clock: ManualClock, repo: JobRepository
    ) -> None:
        """The old holder of a part taken over writes nothing: LeaseLost, the new work stands."""
        job, _ = await split_job(clock, repo, 1)
        old = await take(clock, repo, acquisition_id="old")
        assert old is not None
        new = await take(clock, repo, now=NOW + LEASE, acquisition_id="new")
        assert new is not None
        with pytest.raises(LeaseLost):
            await repo.save_part_if_held(done(old, "stale"), acquisition_id="old")
        with pytest.raises(LeaseLost):
            await repo.renew_part(job.id, 0, acquisition_id="old")
        assert await repo.get_parts(job.id) == [new]
        await repo.save_part_if_held(done(new), acquisition_id="new")
        assert (await repo.get_parts(job.id))[0].text == "слово"

    async def test_a_part_never_leased_or_gone_is_lease_lost(
        self, clock: ManualClock, repo: JobRepository
    ) -> None:
        """No lease, an unknown part, a deleted job: every save and renewal is LeaseLost."""
        job, planned = await split_job(clock, repo, 1)
        with pytest.raises(LeaseLost):
            await repo.save_part_if_held(planned[0], acquisition_id="never")
        with pytest.raises(LeaseLost):
            await repo.renew_part(job.id, 7, acquisition_id="never")
        part = await take(clock, repo, acquisition_id="held")
        assert part is not None
        await repo.delete_job(job.id)
        with pytest.raises(LeaseLost):
            await repo.save_part_if_held(done(part), acquisition_id="held")
        with pytest.raises(LeaseLost):
            await repo.renew_part(job.id, 0, acquisition_id="held")

    async def test_renewal_moves_the_part_lease(
        self, clock: ManualClock, repo: JobRepository
    ) -> None:
        """A renewed part lease lives a lease from the renewal, on the store's clock."""
        job, _ = await split_job(clock, repo, 1)
        part = await take(clock, repo, acquisition_id="held")
        assert part is not None
        clock.set(NOW + LEASE / 2)
        await repo.renew_part(job.id, 0, acquisition_id="held")
        assert await take(clock, repo, now=NOW + LEASE) is None
        assert (await repo.get_parts(job.id))[0].acquire_time == NOW + LEASE / 2

    async def test_a_save_that_keeps_the_lease_keeps_its_renewal(
        self, clock: ManualClock, repo: JobRepository
    ) -> None:
        """Progress saved under the lease keeps it, as renewed: no taker slips in."""
        job, _ = await split_job(clock, repo, 1)
        part = await take(clock, repo, acquisition_id="held")
        assert part is not None
        clock.set(NOW + LEASE / 2)
        await repo.renew_part(job.id, 0, acquisition_id="held")
        due = await repo.save_part_if_held(
            attrs.evolve(part, file_id="cut", operation_id="op"), acquisition_id="held"
        )
        assert due is False
        [stored] = await repo.get_parts(job.id)
        assert (stored.file_id, stored.operation_id) == ("cut", "op")
        assert (stored.acquisition_id, stored.acquire_time) == ("held", NOW + LEASE / 2)
        assert await take(clock, repo, now=NOW + LEASE) is None
        await repo.renew_part(job.id, 0, acquisition_id="held")

    # -- attempts and backoff --------------------------------------------------

    async def test_a_retry_pause_hides_the_part_until_due(
        self, clock: ManualClock, repo: JobRepository
    ) -> None:
        """A part given back with a delay is taken again at the store's now plus it, not before."""
        job, _ = await split_job(clock, repo, 1)
        part = await take(clock, repo, acquisition_id="try-1")
        assert part is not None
        pause = timedelta(seconds=30)
        retry = attrs.evolve(part, error="the recognizer is busy", acquisition_id=None)
        assert await repo.save_part_if_held(retry, acquisition_id="try-1", delay=pause) is False
        [stored] = await repo.get_parts(job.id)
        assert (stored.delay_time, stored.error, stored.acquisition_id) == (
            NOW + pause,
            "the recognizer is busy",
            None,
        )
        assert stored.acquire_time is None
        assert (await repo.ready_states(lease=LEASE)).parts_due is False
        assert await take(clock, repo, now=NOW + pause - timedelta(microseconds=1)) is None
        again = await take(clock, repo, now=NOW + pause)
        assert again is not None
        assert again.attempts == 2

    async def test_attempts_are_counted_and_saved_per_part(
        self, clock: ManualClock, repo: JobRepository
    ) -> None:
        """Each take spends one attempt of that part alone; the saved count is what is stored."""
        job, _ = await split_job(clock, repo, 2)
        for attempt in range(1, 4):
            part = await take(clock, repo, acquisition_id=f"try-{attempt}")
            assert part is not None
            assert (part.index, part.attempts) == (0, attempt)
            released = attrs.evolve(part, error="busy", acquisition_id=None)
            await repo.save_part_if_held(released, acquisition_id=f"try-{attempt}")
        first, second = await repo.get_parts(job.id)
        assert (first.attempts, second.attempts) == (3, 0)
        part = await take(clock, repo, acquisition_id="try-4")
        assert part is not None
        reset = attrs.evolve(part, attempts=0, operation_id="op", acquisition_id=None)
        await repo.save_part_if_held(reset, acquisition_id="try-4")
        assert (await repo.get_parts(job.id))[0].attempts == 0

    async def test_ready_states_say_when_a_part_is_due(
        self, clock: ManualClock, repo: JobRepository
    ) -> None:
        """The poller's one query says a part is due while one may be taken, and not after."""
        clock.set(NOW)
        assert (await repo.ready_states(lease=LEASE)).parts_due is False
        await split_job(clock, repo, 1)
        clock.set(NOW)
        ready = await repo.ready_states(lease=LEASE)
        assert ready.parts_due is True
        assert State.CHECK not in ready.states
        await take(clock, repo)
        assert (await repo.ready_states(lease=LEASE)).parts_due is False

    # -- the join --------------------------------------------------------------

    async def test_the_last_part_done_makes_the_job_due(
        self, clock: ManualClock, repo: JobRepository
    ) -> None:
        """Earlier parts leave the job waiting; the last one done makes it due in its save."""
        job, _ = await split_job(clock, repo, 2)
        first = await take(clock, repo, acquisition_id="a")
        second = await take(clock, repo, acquisition_id="b")
        assert first is not None
        assert second is not None
        assert await repo.save_part_if_held(done(second), acquisition_id="b") is False
        assert await acquire(clock, repo, State.CHECK) is None
        assert await repo.save_part_if_held(done(first), acquisition_id="a") is True
        joined = await acquire(clock, repo, State.CHECK)
        assert joined is not None
        assert joined.id == job.id

    async def test_a_part_failed_for_good_makes_the_job_due(
        self, clock: ManualClock, repo: JobRepository
    ) -> None:
        """One part that gave up is enough: the job is due to fail, its other parts unfinished."""
        job, _ = await split_job(clock, repo, 3)
        part = await take(clock, repo, acquisition_id="a")
        assert part is not None
        failed = attrs.evolve(part, failed=True, error="gave up", acquisition_id=None)
        assert await repo.save_part_if_held(failed, acquisition_id="a") is True
        due = await acquire(clock, repo, State.CHECK)
        assert due is not None
        assert due.id == job.id
        assert (await repo.get_parts(job.id))[0].failed is True

    async def test_two_last_parts_finishing_at_once_make_the_job_due_once(
        self, clock: ManualClock, repo: JobRepository, another_repo: OpenAnother
    ) -> None:
        """Two instances saving the last two parts at once: exactly one sees the job complete."""
        for _ in range(5):
            job, _ = await split_job(clock, repo, 2)
            other = await another_repo()
            first = await take(clock, repo, acquisition_id="a")
            second = await take(clock, other, acquisition_id="b")
            assert first is not None
            assert second is not None
            results = await asyncio.gather(
                repo.save_part_if_held(done(first), acquisition_id="a"),
                other.save_part_if_held(done(second), acquisition_id="b"),
            )
            assert sorted(results) == [False, True]
            assert all(part.done for part in await repo.get_parts(job.id))
            await repo.delete_job(job.id)

    def test_two_last_parts_in_threads_make_the_job_due_once(
        self, clock: ManualClock, repo: JobRepository, open_elsewhere: ElsewhereOpener
    ) -> None:
        """The same race in two real threads, each with its own loop and instance."""
        job, taken = asyncio.run(self._two_taken(clock, open_elsewhere))

        async def finish(parts: JobRepository, n: int) -> bool:
            return await parts.save_part_if_held(done(taken[n]), acquisition_id=f"t-{n}")

        results = race_in_threads(open_elsewhere, 2, finish)
        assert sorted(results) == [False, True]
        assert job

    async def _two_taken(
        self, clock: ManualClock, open_elsewhere: ElsewhereOpener
    ) -> tuple[Job, list[JobPart]]:
        async with open_elsewhere() as elsewhere:
            job, _ = await split_job(clock, elsewhere, 2)
            taken = [await take(clock, elsewhere, acquisition_id=f"t-{n}") for n in range(2)]
        assert all(part is not None for part in taken)
        return job, [part for part in taken if part is not None]

    # -- races -----------------------------------------------------------------

    @pytest.mark.parametrize("takers", [3, 16])
    def test_racing_threads_have_one_winner_per_part(
        self, clock: ManualClock, open_elsewhere: ElsewhereOpener, takers: int
    ) -> None:
        """Takers in real threads racing for one part: exactly one gets it, with one attempt."""

        async def plan() -> str:
            async with open_elsewhere() as elsewhere:
                job, _ = await split_job(clock, elsewhere, 1)
            return job.id

        job_id = asyncio.run(plan())
        clock.set(NOW)

        async def grab(parts: JobRepository, n: int) -> JobPart | None:
            return await parts.acquire_part(acquisition_id=f"taker-{n}", lease=LEASE)

        results = race_in_threads(open_elsewhere, takers, grab)
        winners = [part for part in results if part is not None]
        assert len(winners) == 1, f"{len(winners)} takers got the one part"

        async def stored() -> list[JobPart]:
            async with open_elsewhere() as elsewhere:
                return await elsewhere.get_parts(job_id)

        [part] = asyncio.run(stored())
        assert part.acquisition_id == winners[0].acquisition_id
        assert part.attempts == 1

    def test_racing_threads_drain_every_part_once(
        self, clock: ManualClock, open_elsewhere: ElsewhereOpener
    ) -> None:
        """Four threads draining three jobs' parts hand out every part exactly once."""

        async def plan() -> list[tuple[str, int]]:
            keys: list[tuple[str, int]] = []
            async with open_elsewhere() as elsewhere:
                for n in range(3):
                    created = T0 + timedelta(seconds=n)
                    job, planned = await split_job(clock, elsewhere, 6, created=created)
                    keys.extend((job.id, part.index) for part in planned)
            return keys

        keys = asyncio.run(plan())
        clock.set(NOW)

        async def drain(parts: JobRepository, n: int) -> list[tuple[str, int]]:
            taken = []
            while part := await parts.acquire_part(acquisition_id=new_id(f"{n}-"), lease=LEASE):
                taken.append((part.job_id, part.index))
            return taken

        batches = race_in_threads(open_elsewhere, 4, drain)
        taken = [key for batch in batches for key in batch]
        assert sorted(taken) == sorted(keys)
