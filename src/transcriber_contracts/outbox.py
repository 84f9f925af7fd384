"""The outbox part of the JobRepository contract (ADR 35), mixed into the job repository suites.

Use it beside ``JobRepositoryContract``, whose fixtures it shares::

    class TestMyRepository(JobRepositoryContract, OutboxContract):
        ...  # the ``repo`` and ``another_repo`` fixtures of JobRepositoryContract

``repo`` reads now from the suite's ``clock`` (a ``ManualClock`` the tests
move); ``another_repo`` opens a second, independent repository on the same
storage, as another process would.
"""

from __future__ import annotations

import asyncio
import secrets
from datetime import timedelta

import attrs
import pytest

from transcriber_contracts.repository_support import OpenAnother
from transcriber_core.clocks import ManualClock
from transcriber_core.entities import Delivery, DeliveryKind, Event, Job, NewDelivery, Origin, State
from transcriber_core.errors import LeaseLost
from transcriber_core.outbox import deliveries_for, end_deliveries
from transcriber_core.ports import JobRepository
from transcriber_core.transitions import transition

#: The lease the suite's delivery loops take.
LEASE = timedelta(minutes=2)
CALLBACK = "https://hooks.example.com/transcribed?token=s3cret"


def _new_id() -> str:
    return secrets.token_urlsafe(16)


async def _due(repo: JobRepository) -> bool:
    """Whether the poller's one query says a delivery is due."""
    return (await repo.ready_states(lease=LEASE)).delivery_due


async def _created(
    repo: JobRepository, clock: ManualClock, *, telegram: bool = False, callback: bool = True
) -> Job:
    now = clock.now()
    job = Job(
        id=_new_id(),
        state=State.CONVERT,
        origin=Origin.telegram(42, 7) if telegram else Origin.http(),
        source_file_id=_new_id(),
        callback_url=CALLBACK if callback else None,
        created=now,
        updated=now,
    )
    # What the intake does: the core decides the accepted notice, the store writes it.
    await repo.create(job, (), deliveries_for(job, Event.ACCEPTED))
    return job


async def _ended(repo: JobRepository, clock: ManualClock, job: Job, to: State = State.DONE) -> Job:
    """Lease ``job`` and save it into ``to`` the way a worker does."""
    now = clock.now()
    acquisition_id = _new_id()
    leased = await repo.acquire(job.state, acquisition_id=acquisition_id, lease=LEASE)
    assert leased is not None
    assert leased.id == job.id
    if to is State.DONE:
        ended = transition(leased, State.RECOGNIZE, now=now)
        ended = transition(ended, State.CHECK, now=now)
        ended = transition(ended, State.DONE, now=now, text="hello")
    else:
        ended = transition(leased, to, now=now, error="no audio")
    await repo.save_if_held(ended, acquisition_id=acquisition_id, deliveries=end_deliveries(ended))
    return ended


async def _created_and_leased(repo: JobRepository, clock: ManualClock) -> tuple[Job, Job]:
    """An HTTP job with a callback, created and then leased in convert as ``lease-1``."""
    job = await _created(repo, clock)
    leased = await repo.acquire(State.CONVERT, acquisition_id="lease-1", lease=LEASE)
    assert leased is not None
    return job, leased


async def _take(repo: JobRepository) -> tuple[Delivery, str] | None:
    acquisition_id = _new_id()
    delivery = await repo.acquire_delivery(acquisition_id=acquisition_id, lease=LEASE)
    return None if delivery is None else (delivery, acquisition_id)


async def _must_take(repo: JobRepository) -> tuple[Delivery, str]:
    """The next due delivery and the acquisition id it is leased under; one must be due."""
    taken = await _take(repo)
    assert taken is not None, "no delivery was due"
    return taken


async def _first_of_an_end(repo: JobRepository, clock: ManualClock) -> tuple[Delivery, str]:
    """A Telegram job with a callback whose accepted notice went, then ended: one end delivery."""
    job = await _created(repo, clock, telegram=True)
    accepted = await _must_take(repo)
    await repo.finish_delivery(accepted[0], acquisition_id=accepted[1])
    await _ended(repo, clock, job)
    return await _must_take(repo)


class OutboxContract:
    """Mix into a job repository suite: its ``repo``, ``clock`` and ``another_repo`` fixtures."""

    # -- written with the move -------------------------------------------------

    async def test_a_telegram_job_gets_its_accepted_notice_at_create(
        self, repo: JobRepository, clock: ManualClock
    ) -> None:
        """Creating a Telegram job writes its accepted notice in the same transaction."""
        job = await _created(repo, clock, telegram=True, callback=False)
        taken = await _must_take(repo)
        delivery, _ = taken
        assert (delivery.job_id, delivery.kind, delivery.event) == (
            job.id,
            DeliveryKind.NOTICE,
            Event.ACCEPTED,
        )

    async def test_an_http_job_without_callback_owes_nothing(
        self, repo: JobRepository, clock: ManualClock
    ) -> None:
        """A plain HTTP job that ends writes no delivery: nobody is to be told."""
        job = await _created(repo, clock, callback=False)
        await _ended(repo, clock, job)
        assert await repo.pending_deliveries() == {}
        assert await _take(repo) is None

    async def test_the_end_writes_a_webhook_and_a_notice(
        self, repo: JobRepository, clock: ManualClock
    ) -> None:
        """A Telegram job with a callback that ends owes the end's notice and its webhook."""
        job = await _created(repo, clock, telegram=True)
        assert await repo.pending_deliveries() == {DeliveryKind.NOTICE: 1}
        await _ended(repo, clock, job, State.FAILED)
        assert await repo.pending_deliveries() == {
            DeliveryKind.NOTICE: 2,
            DeliveryKind.WEBHOOK: 1,
        }

    async def test_a_step_that_does_not_end_the_job_writes_nothing(
        self, repo: JobRepository, clock: ManualClock
    ) -> None:
        """Only a move into done, failed or dead calls for deliveries."""
        now = clock.now()
        job, leased = await _created_and_leased(repo, clock)
        moved = transition(leased, State.RECOGNIZE, now=now)
        await repo.save_if_held(moved, acquisition_id="lease-1", deliveries=end_deliveries(moved))
        assert await repo.pending_deliveries() == {}
        assert job.callback_url == CALLBACK

    async def test_a_fenced_end_writes_no_delivery(
        self, repo: JobRepository, clock: ManualClock
    ) -> None:
        """An end saved after the lease passed on is refused whole: no delivery either."""
        now = clock.now()
        job, leased = await _created_and_leased(repo, clock)
        ended = transition(leased, State.FAILED, now=now, error="bad")
        with pytest.raises(LeaseLost):
            await repo.save_if_held(
                ended, acquisition_id="lease-2", deliveries=end_deliveries(ended)
            )
        assert await repo.pending_deliveries() == {}
        assert (await repo.get(job.id)).state is State.CONVERT

    async def test_the_store_writes_the_deliveries_it_is_given_and_judges_none(
        self, repo: JobRepository, clock: ManualClock
    ) -> None:
        """``save_if_held`` writes exactly the deliveries passed, whatever the job's state."""
        job, leased = await _created_and_leased(repo, clock)
        moved = transition(leased, State.RECOGNIZE, now=clock.now())
        given = (NewDelivery(DeliveryKind.NOTICE, Event.DONE),)
        await repo.save_if_held(moved, acquisition_id="lease-1", deliveries=given)
        delivery, _ = await _must_take(repo)
        assert (delivery.job_id, delivery.kind, delivery.event) == (
            job.id,
            DeliveryKind.NOTICE,
            Event.DONE,
        )
        ended = await repo.acquire(State.RECOGNIZE, acquisition_id="lease-2", lease=LEASE)
        assert ended is not None
        done = transition(
            transition(ended, State.CHECK, now=clock.now()), State.DONE, now=clock.now(), text="x"
        )
        await repo.save_if_held(done, acquisition_id="lease-2")
        assert await repo.pending_deliveries() == {DeliveryKind.NOTICE: 1}, "none passed, none made"

    # -- taking, retrying, finishing ---------------------------------------------

    async def test_acquire_leases_the_delivery(
        self, repo: JobRepository, clock: ManualClock
    ) -> None:
        """The delivery comes back leased at the repository's now, one attempt spent."""
        job = await _ended(repo, clock, await _created(repo, clock))
        written = clock.now()
        clock.advance(timedelta(seconds=3))
        taken = await _must_take(repo)
        delivery, acquisition_id = taken
        assert delivery.job_id == job.id
        assert delivery.kind is DeliveryKind.WEBHOOK
        assert delivery.event is Event.DONE
        assert delivery.attempts == 1
        assert delivery.acquisition_id == acquisition_id
        assert delivery.acquire_time == clock.now()
        assert delivery.created == written
        assert delivery.due == written
        assert delivery.last_error is None

    async def test_no_due_delivery_is_none(self, repo: JobRepository) -> None:
        """An empty outbox hands out nothing and says nothing is due."""
        assert await _take(repo) is None
        assert not await _due(repo)

    async def test_a_leased_delivery_is_not_handed_out_twice(
        self, repo: JobRepository, clock: ManualClock
    ) -> None:
        """While its lease lives a delivery goes to nobody else."""
        await _ended(repo, clock, await _created(repo, clock))
        assert await _take(repo) is not None
        assert await _take(repo) is None
        assert not await _due(repo)

    async def test_one_ready_answer_names_the_step_and_the_due_delivery(
        self, repo: JobRepository, clock: ManualClock
    ) -> None:
        """The poller's one query says both which steps have work and that a delivery is due."""
        await _ended(repo, clock, await _created(repo, clock))
        waiting = await _created(repo, clock)
        ready = await repo.ready_states(lease=LEASE)
        assert ready.states == {waiting.state}
        assert ready.delivery_due

    async def test_an_expired_lease_hands_the_delivery_out_again(
        self, repo: JobRepository, clock: ManualClock
    ) -> None:
        """A dead loop's delivery goes out again after its lease; its late finish is fenced."""
        await _ended(repo, clock, await _created(repo, clock))
        first = await _must_take(repo)
        clock.advance(LEASE)
        assert await _due(repo)
        second = await _must_take(repo)
        assert second[0].id == first[0].id
        assert second[0].attempts == 2
        with pytest.raises(LeaseLost):
            await repo.finish_delivery(first[0], acquisition_id=first[1])
        await repo.finish_delivery(second[0], acquisition_id=second[1])
        assert await repo.pending_deliveries() == {}

    async def test_retry_hides_the_delivery_until_its_delay_passed(
        self, repo: JobRepository, clock: ManualClock
    ) -> None:
        """A retried delivery waits its delay, measured on the repository's clock."""
        await _ended(repo, clock, await _created(repo, clock))
        taken = await _must_take(repo)
        await repo.retry_delivery(
            taken[0], acquisition_id=taken[1], delay=timedelta(seconds=30), error="503 answered"
        )
        clock.advance(timedelta(seconds=29))
        assert await _take(repo) is None
        assert not await _due(repo)
        clock.advance(timedelta(seconds=1))
        again = await _must_take(repo)
        assert again[0].attempts == 2
        assert again[0].last_error == "503 answered"
        assert again[0].created == taken[0].created

    async def test_retry_and_finish_need_the_lease(
        self, repo: JobRepository, clock: ManualClock
    ) -> None:
        """Another acquisition id can neither retry nor finish a delivery."""
        await _ended(repo, clock, await _created(repo, clock))
        taken = await _must_take(repo)
        with pytest.raises(LeaseLost):
            await repo.retry_delivery(
                taken[0], acquisition_id="other", delay=timedelta(0), error="x"
            )
        with pytest.raises(LeaseLost):
            await repo.finish_delivery(taken[0], acquisition_id="other")
        assert await repo.pending_deliveries() == {DeliveryKind.WEBHOOK: 1}

    async def test_one_delivery_per_job_in_flight(
        self, repo: JobRepository, clock: ManualClock
    ) -> None:
        """A job's webhook waits while its notice is being sent, and the other way round."""
        first = await _first_of_an_end(repo, clock)
        assert await _take(repo) is None
        await repo.finish_delivery(first[0], acquisition_id=first[1])
        second = await _must_take(repo)
        assert {first[0].kind, second[0].kind} == {DeliveryKind.NOTICE, DeliveryKind.WEBHOOK}

    async def test_a_jobs_notices_go_in_order(
        self, repo: JobRepository, clock: ManualClock
    ) -> None:
        """The done notice never overtakes a retried accepted notice of the same job."""
        job = await _created(repo, clock, telegram=True, callback=False)
        accepted = await _must_take(repo)
        assert accepted[0].event is Event.ACCEPTED
        await repo.retry_delivery(
            accepted[0], acquisition_id=accepted[1], delay=timedelta(minutes=1), error="429"
        )
        await _ended(repo, clock, job)
        assert await _take(repo) is None
        clock.advance(timedelta(minutes=1))
        again = await _must_take(repo)
        assert again[0].event is Event.ACCEPTED
        await repo.finish_delivery(again[0], acquisition_id=again[1])
        done = await _must_take(repo)
        assert done[0].event is Event.DONE

    async def test_a_waiting_webhook_does_not_hold_up_the_notice(
        self, repo: JobRepository, clock: ManualClock
    ) -> None:
        """A webhook backing off leaves its job's notice free to go (only in-flight blocks)."""
        first = await _first_of_an_end(repo, clock)
        await repo.retry_delivery(
            first[0], acquisition_id=first[1], delay=timedelta(hours=1), error="down"
        )
        other = await _must_take(repo)
        assert other[0].kind is not first[0].kind

    async def test_deliveries_go_in_due_order_across_jobs(
        self, repo: JobRepository, clock: ManualClock
    ) -> None:
        """Of several jobs' deliveries the one due first goes first."""
        early = await _ended(repo, clock, await _created(repo, clock))
        clock.advance(timedelta(seconds=1))
        late = await _ended(repo, clock, await _created(repo, clock))
        clock.advance(timedelta(seconds=1))
        order = []
        for _ in range(2):
            taken = await _must_take(repo)
            order.append(taken[0].job_id)
        assert order == [early.id, late.id]

    async def test_acquire_for_one_job_takes_only_its_deliveries(
        self, repo: JobRepository, clock: ManualClock
    ) -> None:
        """An intake sending its own job's notice gets that job's delivery, not an older one."""
        early = await _ended(repo, clock, await _created(repo, clock))
        clock.advance(timedelta(seconds=1))
        late = await _ended(repo, clock, await _created(repo, clock))
        taken = await repo.acquire_delivery(acquisition_id="mine", lease=LEASE, job_id=late.id)
        assert taken is not None
        assert taken.job_id == late.id
        assert await repo.acquire_delivery(acquisition_id="x", lease=LEASE, job_id="none") is None
        other = await _must_take(repo)
        assert other[0].job_id == early.id

    async def test_acquire_of_one_kind_passes_over_the_other(
        self, repo: JobRepository, clock: ManualClock
    ) -> None:
        """A notice loop takes notices only, a webhook loop webhooks only (ADR 44)."""
        webhook_job = await _ended(repo, clock, await _created(repo, clock))
        clock.advance(timedelta(seconds=1))
        await _created(repo, clock, telegram=True)
        notice = await repo.acquire_delivery(
            acquisition_id="n", lease=LEASE, kind=DeliveryKind.NOTICE
        )
        assert notice is not None
        assert notice.kind is DeliveryKind.NOTICE
        assert notice.job_id != webhook_job.id
        webhook = await repo.acquire_delivery(
            acquisition_id="w", lease=LEASE, kind=DeliveryKind.WEBHOOK
        )
        assert webhook is not None
        assert (webhook.kind, webhook.job_id) == (DeliveryKind.WEBHOOK, webhook_job.id)
        for kind in DeliveryKind:
            assert await repo.acquire_delivery(acquisition_id="x", lease=LEASE, kind=kind) is None

    # -- other processes ---------------------------------------------------------------

    async def test_a_second_instance_sees_the_deliveries(
        self, repo: JobRepository, another_repo: OpenAnother, clock: ManualClock
    ) -> None:
        """Deliveries are in the shared storage: a restarted or other process takes them."""
        job = await _ended(repo, clock, await _created(repo, clock))
        twin_repo = await another_repo()
        taken = await _must_take(twin_repo)
        assert taken[0].job_id == job.id
        assert await _take(repo) is None

    async def test_two_instances_never_hand_out_one_delivery_twice(
        self, repo: JobRepository, another_repo: OpenAnother, clock: ManualClock
    ) -> None:
        """Loops on two instances racing over many deliveries get distinct ones, all of them."""
        jobs = [await _ended(repo, clock, await _created(repo, clock)) for _ in range(40)]
        twin_repo = await another_repo()

        async def drain(instance: JobRepository) -> list[int]:
            got: list[int] = []
            while (taken := await _take(instance)) is not None:
                got.append(taken[0].id)
            return got

        results = await asyncio.gather(
            *(drain(instance) for instance in (repo, twin_repo, repo, twin_repo))
        )
        handed = [delivery_id for result in results for delivery_id in result]
        assert len(handed) == len(set(handed)) == len(jobs)

    # -- the status message and its progress notices (SPEC §21, ADR 51) ----------

    async def test_the_status_message_is_noted_under_the_delivery_lease(
        self, clock: ManualClock, repo: JobRepository
    ) -> None:
        """The holder of a notice notes the message id; saves keep it; others write nothing."""
        job = await _created(repo, clock, telegram=True, callback=False)
        delivery, acquisition_id = await _must_take(repo)
        with pytest.raises(LeaseLost):
            await repo.save_status_message(delivery, 5, acquisition_id="someone-else")
        assert (await repo.get(job.id)).status_message_id is None
        await repo.save_status_message(delivery, 5, acquisition_id=acquisition_id)
        assert (await repo.get(job.id)).status_message_id == 5
        await repo.finish_delivery(delivery, acquisition_id=acquisition_id)
        with pytest.raises(LeaseLost):
            await repo.save_status_message(delivery, 6, acquisition_id=acquisition_id)
        leased = await repo.acquire(State.CONVERT, acquisition_id="lease-1", lease=LEASE)
        assert leased is not None
        assert leased.status_message_id == 5
        # A save never writes it, whatever the job it is given says.
        moved = transition(leased, State.FAILED, now=clock.now(), error="no audio")
        await repo.save_if_held(
            attrs.evolve(moved, status_message_id=None), acquisition_id="lease-1"
        )
        assert (await repo.get(job.id)).status_message_id == 5

    async def test_a_waiting_progress_notice_is_not_written_twice(
        self, clock: ManualClock, repo: JobRepository
    ) -> None:
        """A second progress notice is dropped while one waits untaken; once taken, one more."""
        job = await _created(repo, clock, telegram=True, callback=False)
        accepted, accepted_id = await _must_take(repo)
        await repo.finish_delivery(accepted, acquisition_id=accepted_id)
        leased = await repo.acquire(State.CONVERT, acquisition_id="lease-1", lease=LEASE)
        assert leased is not None
        progress = deliveries_for(job, Event.PROGRESS)
        assert progress == (NewDelivery(DeliveryKind.NOTICE, Event.PROGRESS),)
        for seconds in (1.0, 2.0):
            await repo.save_progress_if_held(
                job.id, seconds, acquisition_id="lease-1", deliveries=progress
            )
        assert await repo.pending_deliveries() == {DeliveryKind.NOTICE: 1}
        taken, _ = await _must_take(repo)
        assert taken.event is Event.PROGRESS
        moved = transition(leased, State.RECOGNIZE, now=clock.now())
        await repo.save_if_held(moved, acquisition_id="lease-1", deliveries=progress)
        assert await repo.pending_deliveries() == {DeliveryKind.NOTICE: 2}
