"""The ``JobQueue`` role: acquire, leases, the store's clock, lanes, fenced saves, ready states.

Subclass with the fixtures ``repo`` and ``another_repo`` (``job_repository``'s docstring).
"""

from __future__ import annotations

import asyncio
from datetime import timedelta

import attrs
import pytest

from transcriber_contracts.repository_support import (
    LEASE,
    MICROSECOND,
    NOW,
    T0,
    OpenAnother,
    RepositorySuite,
    acquire,
    check_one_winner,
    create,
    make_job,
    new_id,
    renew,
    states_ready,
    stored,
)
from transcriber_core.clocks import ManualClock
from transcriber_core.entities import (
    TERMINAL_STATES,
    JobPart,
    State,
    Word,
)
from transcriber_core.errors import JobNotFound, LeaseLost
from transcriber_core.ports import JobRepository
from transcriber_core.transitions import transition


class QueueContract(RepositorySuite):
    """Subclass and provide the fixtures ``repo`` and ``another_repo``."""

    # -- acquire -------------------------------------------------------------

    async def test_acquire_without_work_is_none(
        self, clock: ManualClock, repo: JobRepository
    ) -> None:
        """No work is None, not an error: an idle worker must not look like a broken one."""
        assert await acquire(clock, repo) is None

    async def test_acquire_leases_the_job(self, clock: ManualClock, repo: JobRepository) -> None:
        """Acquire sets the holder, acquire_time and updated to now, and counts the attempt."""
        job = make_job()
        await create(clock, repo, job)
        leased = await acquire(clock, repo, acquisition_id="lease-1")
        expected = attrs.evolve(
            job, acquisition_id="lease-1", acquire_time=NOW, updated=NOW, attempts=1
        )
        assert leased == expected
        assert await repo.get(job.id) == expected

    async def test_acquire_takes_the_oldest_first(
        self, clock: ManualClock, repo: JobRepository
    ) -> None:
        """Jobs come out in created order, whatever the insertion order or the ids' order."""
        # The older job's id sorts later, so an order by id alone fails every run.
        young = make_job(id=new_id("a-"), created=T0 + timedelta(microseconds=1))
        old = make_job(id=new_id("b-"), created=T0)
        await stored(clock, repo, young, old)
        first, second = await acquire(clock, repo), await acquire(clock, repo)
        assert first is not None
        assert second is not None
        assert [first.id, second.id] == [old.id, young.id]
        assert await acquire(clock, repo) is None

    async def test_acquire_breaks_ties_by_id(self, clock: ManualClock, repo: JobRepository) -> None:
        """Jobs created at the same instant come out in id order: the queue is deterministic."""
        b = make_job(id=new_id("b-"))
        a = make_job(id=new_id("a-"))
        await stored(clock, repo, b, a)
        first = await acquire(clock, repo)
        assert first is not None
        assert first.id == a.id

    async def test_future_delay_is_not_eligible(
        self, clock: ManualClock, repo: JobRepository
    ) -> None:
        """A job delayed past now stays in the queue untouched."""
        job = make_job(delay_time=NOW + MICROSECOND)
        await create(clock, repo, job)
        assert await acquire(clock, repo) is None
        assert await repo.get(job.id) == job

    async def test_past_delay_is_eligible(self, clock: ManualClock, repo: JobRepository) -> None:
        """A job whose delay has passed is handed out."""
        await create(clock, repo, make_job(delay_time=NOW - MICROSECOND))
        assert await acquire(clock, repo) is not None

    async def test_delay_ending_exactly_now_is_eligible(
        self, clock: ManualClock, repo: JobRepository
    ) -> None:
        """'Not before' includes the instant itself."""
        await create(clock, repo, make_job(delay_time=NOW))
        assert await acquire(clock, repo) is not None

    async def test_live_lease_is_not_eligible(
        self, clock: ManualClock, repo: JobRepository
    ) -> None:
        """A leased job is not handed to a second worker while its lease lives."""
        await create(clock, repo, make_job())
        assert await acquire(clock, repo) is not None
        assert await acquire(clock, repo, now=NOW + LEASE - MICROSECOND) is None

    async def test_expired_lease_is_eligible(self, clock: ManualClock, repo: JobRepository) -> None:
        """A job abandoned mid-step is handed out again once its lease expired (queue rule 3)."""
        job = make_job()
        await create(clock, repo, job)
        await acquire(clock, repo, acquisition_id="lease-dead")
        later = NOW + LEASE + timedelta(seconds=1)
        again = await acquire(clock, repo, now=later, acquisition_id="lease-new")
        assert again is not None
        assert again.id == job.id
        assert (again.acquisition_id, again.acquire_time, again.attempts) == ("lease-new", later, 2)

    async def test_lease_taken_at_the_cutoff_has_expired(
        self, clock: ManualClock, repo: JobRepository
    ) -> None:
        """acquire_time exactly at the cutoff counts as expired, as the port says."""
        await create(clock, repo, make_job())
        await acquire(clock, repo)
        assert await acquire(clock, repo, now=NOW + LEASE) is not None

    async def test_lease_taken_after_the_cutoff_lives(
        self, clock: ManualClock, repo: JobRepository
    ) -> None:
        """One microsecond after the cutoff the lease still holds: no precision is lost."""
        await create(clock, repo, make_job())
        await acquire(clock, repo, now=NOW + MICROSECOND)
        assert await acquire(clock, repo, now=NOW + LEASE) is None

    async def test_attempts_grow_at_every_acquire(
        self, clock: ManualClock, repo: JobRepository
    ) -> None:
        """Every acquire counts, so a job that kills its worker still reaches the limit."""
        await create(clock, repo, make_job())
        now = NOW
        attempts = []
        for _ in range(3):
            leased = await acquire(clock, repo, now=now)
            assert leased is not None
            attempts.append(leased.attempts)
            now += LEASE
        assert attempts == [1, 2, 3]

    async def test_acquire_ignores_other_states(
        self, clock: ManualClock, repo: JobRepository
    ) -> None:
        """A worker of one step never gets a job of another."""
        job = make_job(state=State.RECOGNIZE)
        await create(clock, repo, job)
        assert await acquire(clock, repo, State.CONVERT) is None
        assert await acquire(clock, repo, State.CHECK) is None
        leased = await acquire(clock, repo, State.RECOGNIZE)
        assert leased is not None
        assert leased.id == job.id

    @pytest.mark.parametrize("state", sorted(TERMINAL_STATES))
    async def test_terminal_jobs_are_never_acquired(
        self, clock: ManualClock, repo: JobRepository, state: State
    ) -> None:
        """Asking for a terminal state is refused: a done, failed or dead job never gets a lease."""
        job = make_job(state=state)
        await create(clock, repo, job)
        with pytest.raises(ValueError, match="terminal"):
            await acquire(clock, repo, state)
        assert await repo.get(job.id) == job

    async def test_acquire_skips_an_ineligible_oldest_job(
        self, clock: ManualClock, repo: JobRepository
    ) -> None:
        """A delayed job at the head of the queue does not block the ones behind it."""
        delayed = make_job(created=T0, delay_time=NOW + timedelta(hours=1))
        ready = make_job(created=T0 + timedelta(seconds=1))
        await stored(clock, repo, delayed, ready)
        leased = await acquire(clock, repo)
        assert leased is not None
        assert leased.id == ready.id

    async def test_concurrent_acquires_have_one_winner(
        self, clock: ManualClock, repo: JobRepository, another_repo: OpenAnother
    ) -> None:
        """Three instances on one database racing for one job: exactly one gets it, once."""
        await check_one_winner(clock, [repo, await another_repo(), await another_repo()])

    async def test_racing_instances_never_share_a_job(
        self, clock: ManualClock, repo: JobRepository, another_repo: OpenAnother
    ) -> None:
        """Four instances draining one queue at once hand out every job exactly once."""
        jobs = [make_job(created=T0 + timedelta(microseconds=n)) for n in range(24)]
        await stored(clock, repo, *jobs)
        racers = [repo, *[await another_repo() for _ in range(3)]]
        clock.set(NOW)

        async def drain(racer: JobRepository) -> list[str]:
            taken = []
            while job := await racer.acquire(State.CONVERT, acquisition_id=new_id(), lease=LEASE):
                taken.append(job.id)
            return taken

        taken = [job_id for batch in await asyncio.gather(*map(drain, racers)) for job_id in batch]
        assert sorted(taken) == sorted(job.id for job in jobs)

    async def test_another_instance_sees_and_fences_the_same_jobs(
        self, clock: ManualClock, repo: JobRepository, another_repo: OpenAnother
    ) -> None:
        """A job made through one instance is leased through another, and fenced on both."""
        other = await another_repo()
        job = make_job()
        await create(clock, repo, job)
        leased = await acquire(clock, other, acquisition_id="lease-other")
        assert leased is not None
        assert await acquire(clock, repo) is None
        with pytest.raises(LeaseLost):
            await repo.save_if_held(leased, acquisition_id="lease-mine")
        done = transition(leased, State.RECOGNIZE, now=NOW)
        await repo.save_if_held(done, acquisition_id="lease-other")
        assert await other.get(job.id) == done

    # -- the store's clock (ADR 30) ------------------------------------------

    async def test_create_stamps_the_store_clock(
        self, clock: ManualClock, repo: JobRepository
    ) -> None:
        """Queue order is the store's: ``created`` and ``updated`` come from its clock."""
        job = make_job(created=T0)
        clock.set(T0 + timedelta(hours=1))
        made, is_new = await repo.create(job)
        expected = attrs.evolve(
            job, created=T0 + timedelta(hours=1), updated=T0 + timedelta(hours=1)
        )
        assert (made, is_new) == (expected, True)
        assert await repo.get(job.id) == expected

    async def test_a_skewed_caller_does_not_jump_the_queue(
        self, clock: ManualClock, repo: JobRepository
    ) -> None:
        """A job whose caller's clock runs an hour early still queues behind older jobs."""
        older = make_job(created=T0)
        await create(clock, repo, older)
        early = make_job(created=T0 - timedelta(hours=1))
        clock.set(T0 + MICROSECOND)
        await repo.create(early)
        first = await acquire(clock, repo)
        assert first is not None
        assert first.id == older.id

    async def test_delay_counts_from_the_store_clock(
        self, clock: ManualClock, repo: JobRepository
    ) -> None:
        """A saved delay is the store's now plus the duration; the job's delay_time is ignored."""
        await create(clock, repo, make_job())
        leased = await acquire(clock, repo, acquisition_id="lease-1")
        assert leased is not None
        # The worker's clock is five minutes fast: its own idea of "due" is far off.
        skewed = NOW + timedelta(minutes=5)
        retry = transition(
            leased, State.CONVERT, now=skewed, error="x", delay_until=skewed + timedelta(seconds=1)
        )
        await repo.save_if_held(retry, acquisition_id="lease-1", delay=timedelta(seconds=1))
        due = NOW + timedelta(seconds=1)
        assert (await repo.get(leased.id)).delay_time == due
        assert await acquire(clock, repo, now=due - MICROSECOND) is None
        assert await acquire(clock, repo, now=due) is not None

    async def test_save_without_delay_keeps_the_jobs_own(
        self, clock: ManualClock, repo: JobRepository
    ) -> None:
        """Without ``delay`` a save writes the job's ``delay_time`` as it is (none after a step)."""
        await create(clock, repo, make_job())
        leased = await acquire(clock, repo, acquisition_id="lease-1")
        assert leased is not None
        done = transition(leased, State.RECOGNIZE, now=NOW)
        await repo.save_if_held(done, acquisition_id="lease-1")
        assert (await repo.get(leased.id)).delay_time is None

    async def test_renew_stamps_the_store_clock(
        self, clock: ManualClock, repo: JobRepository
    ) -> None:
        """A renewal moves ``acquire_time`` to the store's now, whatever the worker thinks."""
        await create(clock, repo, make_job())
        leased = await acquire(clock, repo, acquisition_id="lease-1")
        assert leased is not None
        await renew(
            clock, repo, leased.id, acquisition_id="lease-1", now=NOW + timedelta(seconds=30)
        )
        assert (await repo.get(leased.id)).acquire_time == NOW + timedelta(seconds=30)

    # -- the express lane (ADR 27) ------------------------------------------

    async def test_express_acquire_takes_only_short_jobs(
        self, clock: ManualClock, repo: JobRepository
    ) -> None:
        """The express lane passes over an older long job and leases the oldest short one."""
        long_job = make_job(created=T0)
        later_short = make_job(created=T0 + timedelta(seconds=2), short=True)
        short = make_job(created=T0 + timedelta(seconds=1), short=True)
        await stored(clock, repo, long_job, later_short, short)
        first = await acquire(clock, repo, short_only=True)
        second = await acquire(clock, repo, short_only=True)
        assert first is not None
        assert second is not None
        assert [first.id, second.id] == [short.id, later_short.id]
        assert await acquire(clock, repo, short_only=True) is None
        assert (await repo.get(long_job.id)).acquisition_id is None

    async def test_general_acquire_takes_any_job_in_queue_order(
        self, clock: ManualClock, repo: JobRepository
    ) -> None:
        """The general lanes take short and long jobs alike, oldest first: none is skipped."""
        short = make_job(created=T0 + timedelta(seconds=1), short=True)
        long_job = make_job(created=T0)
        await stored(clock, repo, short, long_job)
        first, second = await acquire(clock, repo), await acquire(clock, repo)
        assert first is not None
        assert second is not None
        assert [first.id, second.id] == [long_job.id, short.id]

    async def test_express_acquire_keeps_eligibility(
        self, clock: ManualClock, repo: JobRepository
    ) -> None:
        """Short jobs that are delayed, leased or in another state are not taken by the lane."""
        delayed = make_job(short=True, delay_time=NOW + timedelta(seconds=1))
        elsewhere = make_job(short=True, state=State.RECOGNIZE)
        leased = make_job(short=True, created=T0 + timedelta(seconds=1))
        await stored(clock, repo, delayed, elsewhere, leased)
        assert await acquire(clock, repo, short_only=True) is not None
        assert await acquire(clock, repo, short_only=True) is None

    async def test_the_short_mark_is_saved(self, clock: ManualClock, repo: JobRepository) -> None:
        """A step that takes the mark away (convert measured a long recording) saves it."""
        await create(clock, repo, make_job(short=True))
        leased = await acquire(clock, repo, acquisition_id="lease-short")
        assert leased is not None
        longer = transition(leased, State.RECOGNIZE, now=NOW, short=False)
        await repo.save_if_held(longer, acquisition_id="lease-short")
        assert (await repo.get(leased.id)).short is False
        assert await acquire(clock, repo, State.RECOGNIZE, short_only=True) is None

    # -- renew ---------------------------------------------------------------

    async def test_renew_moves_the_lease(self, clock: ManualClock, repo: JobRepository) -> None:
        """A renewed lease outlives the original one: a slow step keeps its job."""
        job = make_job()
        await create(clock, repo, job)
        await acquire(clock, repo, acquisition_id="lease-1")
        renewed_at = NOW + timedelta(seconds=90)
        await renew(clock, repo, job.id, acquisition_id="lease-1", now=renewed_at)
        assert (await repo.get(job.id)).acquire_time == renewed_at
        assert await acquire(clock, repo, now=NOW + LEASE + timedelta(seconds=1)) is None
        assert await acquire(clock, repo, now=renewed_at + LEASE) is not None

    async def test_renew_with_another_id_is_lease_lost(
        self, clock: ManualClock, repo: JobRepository
    ) -> None:
        """Renewing someone else's lease raises LeaseLost and moves nothing."""
        job = make_job()
        await create(clock, repo, job)
        await acquire(clock, repo, acquisition_id="lease-1")
        with pytest.raises(LeaseLost):
            await renew(
                clock, repo, job.id, acquisition_id="lease-2", now=NOW + timedelta(seconds=30)
            )
        assert (await repo.get(job.id)).acquire_time == NOW

    async def test_renew_after_the_lease_passed_on_is_lease_lost(
        self, clock: ManualClock, repo: JobRepository
    ) -> None:
        """The first holder's renewal fails once another worker took the expired lease."""
        job = make_job()
        await create(clock, repo, job)
        await acquire(clock, repo, acquisition_id="lease-1")
        await acquire(clock, repo, now=NOW + LEASE, acquisition_id="lease-2")
        with pytest.raises(LeaseLost):
            await renew(clock, repo, job.id, acquisition_id="lease-1", now=NOW + LEASE)

    async def test_renew_unknown_job_is_lease_lost(
        self, clock: ManualClock, repo: JobRepository
    ) -> None:
        """A job that no longer exists cannot be held."""
        with pytest.raises(LeaseLost):
            await renew(clock, repo, new_id(), acquisition_id="lease-1", now=NOW)

    # -- save_if_held --------------------------------------------------------

    async def test_save_if_held_writes_every_field(
        self, clock: ManualClock, repo: JobRepository
    ) -> None:
        """The holder's save writes every field of the job, the released lease included."""
        job = make_job()
        await create(clock, repo, job)
        leased = await acquire(clock, repo, acquisition_id="lease-1")
        assert leased is not None
        later = NOW + timedelta(seconds=3, microseconds=5)
        result = transition(
            leased,
            State.RECOGNIZE,
            now=later,
            converted_file_id=new_id(),
            duration=61.25,
            text="partial",
            words=(Word(text="a", start=0.5, end=0.75),),
            operation_id="op-1",
        )
        await repo.save_if_held(result, acquisition_id="lease-1")
        assert await repo.get(job.id) == result

    async def test_detected_language_is_saved_with_the_transcript(
        self, clock: ManualClock, repo: JobRepository
    ) -> None:
        """A recognize step that ends done stores the language it heard with the text (ADR 28)."""
        await create(clock, repo, make_job(state=State.RECOGNIZE))
        leased = await acquire(clock, repo, state=State.RECOGNIZE, acquisition_id="lease-1")
        assert leased is not None
        done = transition(
            leased, State.DONE, now=NOW, text="hello", language="en", operation_id="local-1"
        )
        await repo.save_if_held(done, acquisition_id="lease-1")
        stored = await repo.get(leased.id)
        assert (stored.state, stored.text, stored.language) == (State.DONE, "hello", "en")

    async def test_save_if_held_by_another_writes_nothing(
        self, clock: ManualClock, repo: JobRepository
    ) -> None:
        """A save with the wrong acquisition id raises LeaseLost and leaves the job as it was."""
        await create(clock, repo, make_job())
        leased = await acquire(clock, repo, acquisition_id="lease-1")
        assert leased is not None
        result = transition(leased, State.RECOGNIZE, now=NOW, duration=1.0)
        with pytest.raises(LeaseLost):
            await repo.save_if_held(result, acquisition_id="lease-2")
        assert await repo.get(leased.id) == leased

    async def test_save_after_the_lease_passed_on_is_fenced(
        self, clock: ManualClock, repo: JobRepository
    ) -> None:
        """A worker whose expired lease was taken cannot write; its new holder can (rule 4)."""
        await create(clock, repo, make_job())
        old = await acquire(clock, repo, acquisition_id="lease-old")
        assert old is not None
        new = await acquire(clock, repo, now=NOW + LEASE, acquisition_id="lease-new")
        assert new is not None
        with pytest.raises(LeaseLost):
            await repo.save_if_held(
                transition(old, State.RECOGNIZE, now=NOW + LEASE), acquisition_id="lease-old"
            )
        assert await repo.get(new.id) == new
        done = transition(new, State.RECOGNIZE, now=NOW + LEASE)
        await repo.save_if_held(done, acquisition_id="lease-new")
        assert await repo.get(new.id) == done

    async def test_save_if_held_on_an_unleased_job_is_lease_lost(
        self, clock: ManualClock, repo: JobRepository
    ) -> None:
        """A job nobody holds cannot be saved as held, whatever id is claimed."""
        job = make_job()
        await create(clock, repo, job)
        with pytest.raises(LeaseLost):
            await repo.save_if_held(attrs.evolve(job, text="x"), acquisition_id="lease-1")
        assert await repo.get(job.id) == job

    async def test_save_if_held_unknown_job_is_lease_lost(self, repo: JobRepository) -> None:
        """Saving a job that no longer exists is LeaseLost, and creates nothing."""
        job = make_job(acquisition_id="lease-1", acquire_time=NOW)
        with pytest.raises(LeaseLost):
            await repo.save_if_held(job, acquisition_id="lease-1")
        with pytest.raises(JobNotFound):
            await repo.get(job.id)

    # -- the pipeline's saves and the queue ------------------------------------

    async def test_retry_delay_hides_the_job_until_due(
        self, clock: ManualClock, repo: JobRepository
    ) -> None:
        """A failed attempt's retry pause hides the job from the queue, then it is handed out."""
        await create(clock, repo, make_job())
        leased = await acquire(clock, repo, acquisition_id="lease-1")
        assert leased is not None
        due = NOW + timedelta(seconds=1)
        retry = transition(leased, State.CONVERT, now=NOW, error="ffmpeg crashed", delay_until=due)
        await repo.save_if_held(retry, acquisition_id="lease-1", delay=due - NOW)
        assert await acquire(clock, repo, now=due - MICROSECOND) is None
        assert await states_ready(clock, repo, now=due - MICROSECOND) == frozenset()
        again = await acquire(clock, repo, now=due)
        assert again is not None
        assert (again.attempts, again.error) == (2, "ffmpeg crashed")

    async def test_finished_step_moves_the_job_to_the_next_queue(
        self, clock: ManualClock, repo: JobRepository
    ) -> None:
        """A step's saved result is work for the next step, with attempts reset (queue rule 5)."""
        await create(clock, repo, make_job())
        leased = await acquire(clock, repo, acquisition_id="lease-1")
        assert leased is not None
        await repo.save_if_held(
            transition(leased, State.RECOGNIZE, now=NOW), acquisition_id="lease-1"
        )
        assert await acquire(clock, repo, State.CONVERT) is None
        next_step = await acquire(clock, repo, State.RECOGNIZE)
        assert next_step is not None
        assert next_step.attempts == 1

    # -- ready_states ----------------------------------------------------------

    async def test_ready_states_of_an_empty_queue(
        self, clock: ManualClock, repo: JobRepository
    ) -> None:
        """No jobs, no ready states."""
        assert await states_ready(clock, repo) == frozenset()

    async def test_ready_states_names_only_states_with_eligible_work(
        self, clock: ManualClock, repo: JobRepository
    ) -> None:
        """Delayed, leased and terminal jobs wake nobody; an eligible one wakes its step."""
        await stored(
            clock,
            repo,
            make_job(state=State.CONVERT),
            make_job(state=State.RECOGNIZE, delay_time=NOW + timedelta(seconds=1)),
            make_job(state=State.CHECK),
            make_job(state=State.DONE),
            make_job(state=State.DEAD),
        )
        await acquire(clock, repo, State.CHECK)
        ready = await states_ready(clock, repo)
        assert ready == frozenset({State.CONVERT})

    async def test_ready_states_counts_expired_leases(
        self, clock: ManualClock, repo: JobRepository
    ) -> None:
        """A job with an expired lease is work, so the poller wakes a worker for it."""
        await create(clock, repo, make_job(state=State.CHECK))
        await acquire(clock, repo, State.CHECK)
        later = NOW + LEASE
        assert await states_ready(clock, repo, now=later) == {State.CHECK}

    # -- parts of a split job (ADR 26) --------------------------------------

    async def test_a_job_recognised_whole_has_no_parts(
        self, clock: ManualClock, repo: JobRepository
    ) -> None:
        """No parts is the normal case: the steps take it as "recognise whole"."""
        [job] = await stored(clock, repo, make_job(state=State.RECOGNIZE))
        assert await repo.get_parts(job.id) == []
        assert await repo.get_parts("no-such-job") == []

    async def test_parts_roundtrip_in_index_order(
        self, clock: ManualClock, repo: JobRepository
    ) -> None:
        """Every field of a part, words included, comes back; parts come by index."""
        [job] = await stored(clock, repo, make_job(state=State.RECOGNIZE))
        leased = await acquire(clock, repo, State.RECOGNIZE, acquisition_id="lease-parts")
        assert leased is not None
        done = JobPart(
            job_id=job.id,
            index=1,
            start=3501.25,
            end=7001.5,
            file_id="part-file",
            storage_file_id="part-copy",
            operation_id="op-1",
            text="вторая часть",
            words=(Word(text="вторая", start=0.5, end=0.9),),
        )
        first = JobPart(job_id=job.id, index=0, start=0.0, end=3501.25)
        await repo.save_parts_if_held(job.id, [done, first], acquisition_id="lease-parts")
        assert await repo.get_parts(job.id) == [first, done]

    async def test_saving_a_part_again_replaces_it(
        self, clock: ManualClock, repo: JobRepository
    ) -> None:
        """A part saved at the same index is replaced: a step records its progress this way."""
        [job] = await stored(clock, repo, make_job(state=State.RECOGNIZE))
        leased = await acquire(clock, repo, State.RECOGNIZE, acquisition_id="lease-replace")
        assert leased is not None
        part = JobPart(job_id=job.id, index=0, start=0.0, end=10.0)
        await repo.save_parts_if_held(job.id, [part], acquisition_id="lease-replace")
        started = attrs.evolve(part, operation_id="op-0")
        await repo.save_parts_if_held(job.id, [started], acquisition_id="lease-replace")
        assert await repo.get_parts(job.id) == [started]

    async def test_parts_are_written_only_under_the_lease(
        self, clock: ManualClock, repo: JobRepository
    ) -> None:
        """A worker whose lease passed on writes no part: LeaseLost, nothing stored."""
        [job] = await stored(clock, repo, make_job(state=State.RECOGNIZE))
        part = JobPart(job_id=job.id, index=0, start=0.0, end=10.0, operation_id="stale")
        with pytest.raises(LeaseLost):
            await repo.save_parts_if_held(job.id, [part], acquisition_id="never-leased")
        await acquire(clock, repo, State.RECOGNIZE, acquisition_id="lease-old")
        later = NOW + LEASE + timedelta(seconds=1)
        assert await acquire(clock, repo, State.RECOGNIZE, now=later, acquisition_id="lease-new")
        with pytest.raises(LeaseLost):
            await repo.save_parts_if_held(job.id, [part], acquisition_id="lease-old")
        with pytest.raises(LeaseLost):
            await repo.save_parts_if_held(
                "gone", [attrs.evolve(part, job_id="gone")], acquisition_id="lease-new"
            )
        assert await repo.get_parts(job.id) == []

    async def test_parts_of_one_job_stay_with_it(
        self, clock: ManualClock, repo: JobRepository
    ) -> None:
        """Parts are kept per job; a part given for another job is refused."""
        one, other = await stored(
            clock,
            repo,
            make_job(state=State.RECOGNIZE),
            make_job(state=State.RECOGNIZE, created=T0 + timedelta(seconds=1)),
        )
        leased = await acquire(clock, repo, State.RECOGNIZE, acquisition_id="lease-a")
        assert leased is not None
        assert leased.id == one.id
        part = JobPart(job_id=one.id, index=0, start=0.0, end=5.0)
        await repo.save_parts_if_held(one.id, [part], acquisition_id="lease-a")
        assert await repo.get_parts(other.id) == []
        with pytest.raises(ValueError, match="belong"):
            await repo.save_parts_if_held(other.id, [part], acquisition_id="lease-a")


#: How long after its end a job's files go, and the job itself, in the lifecycle suite.
