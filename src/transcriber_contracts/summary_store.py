"""The contract every SummaryStore adapter passes: one summary per job, leased, fenced, raced.

Use it from your own tests::

    class TestMySummaryStore(SummaryStoreContract):
        @pytest.fixture
        async def stores(self, clock, tmp_path):
            repo = await MyRepository.open(tmp_path / "jobs.db", clock=clock)
            yield MySummaryStore(repo.database, clock=clock), repo
            await repo.close()

        @pytest.fixture
        def open_summaries(self, stores, clock, tmp_path):
            async def another():
                store = await MySummaryStore.open(tmp_path / "jobs.db", clock=clock)
                return store, store.close

            return another

``stores`` yields a fresh summary store and the job repository on the same
database (summaries belong to its jobs); ``open_summaries`` opens one more
independent summary store on that database, as another process would, with
the function that closes it (the race test calls it in threads of its own).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import timedelta

import attrs
import pytest

from transcriber_contracts.racing import in_threads
from transcriber_contracts.repository_support import LEASE, T0, make_job
from transcriber_core.clocks import ManualClock
from transcriber_core.entities import DeliveryKind, Event, Job, NewDelivery, State
from transcriber_core.errors import JobNotFound, LeaseLost
from transcriber_core.ports import JobRepository, SummaryStore
from transcriber_core.summaries import PROMPT_VERSION, Action, Summary, SummaryState

#: Opens one more summary store on the suite's database: the store and how to close it.
OpenSummaries = Callable[[], Awaitable[tuple[SummaryStore, Callable[[], Awaitable[None]]]]]
#: The suite's store and the job repository on the same database.
Stores = tuple[SummaryStore, JobRepository]
#: Threads in the race.
RACERS = 4


def done_job(*, minutes: int = 0) -> Job:
    """A transcribed job created ``minutes`` after ``T0``."""
    created = T0 + timedelta(minutes=minutes)
    return make_job(
        created=created, state=State.DONE, text="we ship on friday", duration=3.0, ended=created
    )


class SummaryStoreContract:
    """Subclass and provide the fixtures ``stores`` and ``open_summaries`` (module docstring)."""

    @pytest.fixture
    def clock(self) -> ManualClock:
        """The store's clock; the adapter's fixtures build their stores on it."""
        return ManualClock(T0)

    async def _job(self, stores: Stores, clock: ManualClock, job: Job | None = None) -> Job:
        clock.set((job or done_job()).created)
        stored, _ = await stores[1].create(job or done_job())
        return stored

    async def test_never_asked_is_none_and_an_unknown_job_is_refused(
        self, stores: Stores, clock: ManualClock
    ) -> None:
        """No summary is None; asking for one of a job that does not exist is ``JobNotFound``."""
        summaries, _ = stores
        job = await self._job(stores, clock)
        assert await summaries.get_summary(job.id) is None
        with pytest.raises(JobNotFound):
            await summaries.request_summary("no-such-job")

    async def test_asked_for_it_is_pending_from_now(
        self, stores: Stores, clock: ManualClock
    ) -> None:
        """A summary asked for is pending, unleased, without attempts, stamped by the store."""
        summaries, _ = stores
        job = await self._job(stores, clock)
        clock.set(T0 + timedelta(minutes=1))
        asked = await summaries.request_summary(job.id)
        assert asked == Summary(job_id=job.id, requested=T0 + timedelta(minutes=1))
        assert await summaries.get_summary(job.id) == asked

    async def test_only_a_done_jobs_summary_is_handed_out(
        self, stores: Stores, clock: ManualClock
    ) -> None:
        """A summary waits for its job to be done; of two, the one asked first goes first."""
        summaries, _ = stores
        waiting = await self._job(stores, clock, make_job(created=T0))
        first = await self._job(stores, clock, done_job(minutes=1))
        second = await self._job(stores, clock, done_job(minutes=2))
        for job in (waiting, second, first):
            await summaries.request_summary(job.id)
            clock.advance(timedelta(seconds=1))
        taken = await summaries.acquire_summary(acquisition_id="a1", lease=LEASE)
        assert taken is not None
        assert (taken.job_id, taken.attempts, taken.acquisition_id) == (second.id, 1, "a1")
        assert taken.acquire_time == clock.now()
        other = await summaries.acquire_summary(acquisition_id="a2", lease=LEASE)
        assert other is not None
        assert other.job_id == first.id
        assert await summaries.acquire_summary(acquisition_id="a3", lease=LEASE) is None

    async def test_pending_ones_are_counted_until_built(
        self, stores: Stores, clock: ManualClock
    ) -> None:
        """Pending summaries count, leased or waiting for their job; a built one no longer does."""
        summaries, _ = stores
        assert await summaries.count_pending_summaries() == 0
        waiting = await self._job(stores, clock, make_job(created=T0))
        done = await self._job(stores, clock, done_job(minutes=1))
        await summaries.request_summary(waiting.id)
        await summaries.request_summary(done.id)
        taken = await summaries.acquire_summary(acquisition_id="a1", lease=LEASE)
        assert taken is not None
        assert await summaries.count_pending_summaries() == 2
        built = attrs.evolve(taken, state=SummaryState.DONE, text="t", acquisition_id=None)
        await summaries.save_summary_if_held(built, acquisition_id="a1")
        assert await summaries.count_pending_summaries() == 1

    async def test_a_live_lease_is_kept_and_an_expired_one_handed_out(
        self, stores: Stores, clock: ManualClock
    ) -> None:
        """A leased summary is not handed out until its lease is ``lease`` old; renewal moves it."""
        summaries, _ = stores
        job = await self._job(stores, clock)
        await summaries.request_summary(job.id)
        assert await summaries.acquire_summary(acquisition_id="a1", lease=LEASE) is not None
        clock.advance(LEASE - timedelta(seconds=1))
        await summaries.renew_summary(job.id, acquisition_id="a1")
        clock.advance(LEASE - timedelta(seconds=1))
        assert await summaries.acquire_summary(acquisition_id="a2", lease=LEASE) is None
        with pytest.raises(LeaseLost):
            await summaries.renew_summary(job.id, acquisition_id="a2")
        clock.advance(timedelta(seconds=1))
        again = await summaries.acquire_summary(acquisition_id="a2", lease=LEASE)
        assert again is not None
        assert (again.attempts, again.acquisition_id) == (2, "a2")
        with pytest.raises(LeaseLost):
            await summaries.save_summary_if_held(again, acquisition_id="a1")

    async def test_a_built_summary_is_saved_whole_and_released(
        self, stores: Stores, clock: ManualClock
    ) -> None:
        """The holder's save keeps every field, giving the lease back."""
        summaries, _ = stores
        job = await self._job(stores, clock)
        await summaries.request_summary(job.id)
        taken = await summaries.acquire_summary(acquisition_id="a1", lease=LEASE)
        assert taken is not None
        built = attrs.evolve(
            taken,
            state=SummaryState.DONE,
            text="Решили выпустить в пятницу.",
            points=("релиз в пятницу", 'quotes "and" \\ slashes'),
            actions=(Action(text="написать отчёт", who="Диана"), Action(text="book a room")),
            model="llama3.1:8b",
            prompt_version=PROMPT_VERSION,
            source="d" * 64,
            created=clock.now(),
            acquisition_id=None,
        )
        await summaries.save_summary_if_held(built, acquisition_id="a1")
        stored = await summaries.get_summary(job.id)
        assert stored == attrs.evolve(built, acquire_time=None)
        assert await summaries.acquire_summary(acquisition_id="a2", lease=LEASE) is None
        with pytest.raises(LeaseLost):
            await summaries.save_summary_if_held(built, acquisition_id="a1")

    async def test_a_saves_deliveries_are_written_with_it_and_only_with_it(
        self, stores: Stores, clock: ManualClock
    ) -> None:
        """A held save writes its deliveries to the outbox; a save that lost its lease, none."""
        summaries, repo = stores
        job = await self._job(stores, clock)
        await summaries.request_summary(job.id)
        taken = await summaries.acquire_summary(acquisition_id="a1", lease=LEASE)
        assert taken is not None
        notice = (NewDelivery(DeliveryKind.NOTICE, Event.SUMMARY),)
        with pytest.raises(LeaseLost):
            await summaries.save_summary_if_held(taken, acquisition_id="a2", deliveries=notice)
        assert await repo.acquire_delivery(acquisition_id="d1", lease=LEASE) is None
        done = attrs.evolve(taken, state=SummaryState.DONE, text="we ship", acquisition_id=None)
        await summaries.save_summary_if_held(done, acquisition_id="a1", deliveries=notice)
        delivery = await repo.acquire_delivery(acquisition_id="d1", lease=LEASE)
        assert delivery is not None
        assert (delivery.job_id, delivery.kind, delivery.event) == (
            job.id,
            DeliveryKind.NOTICE,
            Event.SUMMARY,
        )
        assert await repo.acquire_delivery(acquisition_id="d2", lease=LEASE) is None

    async def test_a_retry_waits_out_its_delay(self, stores: Stores, clock: ManualClock) -> None:
        """A summary given back with a delay is handed out again only once the delay has passed."""
        summaries, _ = stores
        job = await self._job(stores, clock)
        await summaries.request_summary(job.id)
        taken = await summaries.acquire_summary(acquisition_id="a1", lease=LEASE)
        assert taken is not None
        retry = attrs.evolve(taken, error="the server answered 503", acquisition_id=None)
        await summaries.save_summary_if_held(
            retry, acquisition_id="a1", delay=timedelta(seconds=30)
        )
        stored = await summaries.get_summary(job.id)
        assert stored is not None
        assert stored.delay_time == clock.now() + timedelta(seconds=30)
        assert stored.error == "the server answered 503"
        clock.advance(timedelta(seconds=29))
        assert await summaries.acquire_summary(acquisition_id="a2", lease=LEASE) is None
        clock.advance(timedelta(seconds=1))
        again = await summaries.acquire_summary(acquisition_id="a2", lease=LEASE)
        assert again is not None
        assert again.attempts == 2

    async def test_asking_again_starts_over_and_fences_out_the_old_holder(
        self, stores: Stores, clock: ManualClock
    ) -> None:
        """Asked again, a summary is pending from scratch: its old holder's save writes nothing."""
        summaries, _ = stores
        job = await self._job(stores, clock)
        await summaries.request_summary(job.id)
        taken = await summaries.acquire_summary(acquisition_id="a1", lease=LEASE)
        assert taken is not None
        failed = attrs.evolve(taken, state=SummaryState.FAILED, error="refused")
        await summaries.save_summary_if_held(failed, acquisition_id="a1")
        clock.advance(timedelta(minutes=1))
        asked = await summaries.request_summary(job.id)
        assert asked == Summary(job_id=job.id, requested=clock.now())
        with pytest.raises(LeaseLost):
            await summaries.save_summary_if_held(failed, acquisition_id="a1")
        taken = await summaries.acquire_summary(acquisition_id="a2", lease=LEASE)
        assert taken is not None
        assert taken.attempts == 1

    async def test_a_summary_goes_with_its_job(self, stores: Stores, clock: ManualClock) -> None:
        """Deleting a job deletes its summary; its holder's save is then ``LeaseLost``."""
        summaries, repo = stores
        job = await self._job(stores, clock)
        await summaries.request_summary(job.id)
        taken = await summaries.acquire_summary(acquisition_id="a1", lease=LEASE)
        assert taken is not None
        await repo.delete_job(job.id)
        assert await summaries.get_summary(job.id) is None
        with pytest.raises(LeaseLost):
            await summaries.save_summary_if_held(taken, acquisition_id="a1")

    async def test_one_of_many_takers_gets_the_summary(
        self, stores: Stores, clock: ManualClock, open_summaries: OpenSummaries
    ) -> None:
        """Takers in several processes at once: exactly one leases the one due summary."""
        summaries, _ = stores
        job = await self._job(stores, clock)
        await summaries.request_summary(job.id)

        async def racer(n: int, ready: Callable[[], object]) -> Summary | None:
            store, close = await open_summaries()
            try:
                ready()
                return await store.acquire_summary(acquisition_id=f"r{n}", lease=LEASE)
            finally:
                await close()

        taken = [s for s in in_threads(RACERS, racer) if s is not None]
        assert [s.job_id for s in taken] == [job.id]
