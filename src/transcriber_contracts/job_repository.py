"""The contract every JobRepository adapter passes: records, dedup, and the queue rules.

Use it from your own tests::

    class TestMyRepository(JobRepositoryContract):
        @pytest.fixture
        async def repo(self, clock, tmp_path):
            repo = await MyRepository.open(tmp_path / "jobs.db", clock=clock)
            yield repo
            await repo.close()

        @pytest.fixture
        async def another_repo(self, clock, tmp_path):
            opened = []

            async def another():
                opened.append(await MyRepository.open(tmp_path / "jobs.db", clock=clock))
                return opened[-1]

            yield another
            for repo in opened:
                await repo.close()

``repo`` must yield a fresh, empty repository whose clock is the suite's
``clock`` (a ``ManualClock`` the suite moves: the store judges every lease
and delay by it, ADR 30). ``another_repo`` must yield an async function that
opens one more independent instance on the same database and clock (its own
connection, as a second process would have); the race tests run several at
once. Under pytest-asyncio's strict mode, decorate async fixtures with
``pytest_asyncio.fixture``. Every time is timezone-aware and fixed; nothing
reads the system clock.
"""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import Awaitable, Callable, Sequence
from datetime import UTC, datetime, timedelta, timezone

import attrs
import pytest

from transcriber_core.clocks import ManualClock
from transcriber_core.entities import (
    TERMINAL_STATES,
    FileRecord,
    Job,
    JobPart,
    Location,
    Origin,
    State,
    Word,
)
from transcriber_core.errors import Conflict, FileNotFound, JobChanged, JobNotFound, LeaseLost
from transcriber_core.languages import Task
from transcriber_core.outbox import end_deliveries
from transcriber_core.policy import QUEUE_POSITION_LIMIT
from transcriber_core.ports import JobRepository, Removed
from transcriber_core.transitions import Actor, transition

#: When the suite's jobs are created; odd microseconds catch any lost precision.
T0 = datetime(2026, 3, 1, 12, 0, 0, 123457, tzinfo=UTC)
#: When the suite's workers ask for work.
NOW = T0 + timedelta(minutes=10)
#: A SHA-256 digest as intake stores it: 64 lower-case hex digits.
DIGEST = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
#: The lease the suite's workers use.
LEASE = timedelta(minutes=2)
_MICROSECOND = timedelta(microseconds=1)


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


class JobRepositoryContract:
    """Subclass and provide the fixtures ``repo`` and ``another_repo`` (module docstring)."""

    @pytest.fixture
    def clock(self) -> ManualClock:
        """The store's clock; the adapter's fixtures build their repositories on it."""
        return ManualClock(T0)

    # -- create and get ------------------------------------------------------

    async def test_create_returns_the_job_as_new(
        self, clock: ManualClock, repo: JobRepository
    ) -> None:
        """A first create reports the job as new; a broken flag would drop the sender's reply."""
        job = make_job()
        assert await create(clock, repo, job) == (job, True)

    async def test_every_field_roundtrips(self, clock: ManualClock, repo: JobRepository) -> None:
        """Every field, words, origin and microsecond times included, comes back as written."""
        job = Job(
            id=new_id(),
            state=State.CHECK,
            origin=Origin.telegram(-1001234567890, 987654),
            source_file_id=new_id(),
            converted_file_id=new_id(),
            storage_file_id=new_id(),
            operation_id="op-" + new_id(),
            duration=3723.456789,
            text="Привет, мир — «hello» 🎙",
            words=(
                Word(text="Привет", start=0.0, end=0.879999999),
                Word(text="мир", start=0.88, end=1.5),
            ),
            language="ru",
            language_requested="uk",
            prompt="Names: Ярослав, Dmitri.\nTerms: ASR",
            task=Task.TRANSLATE,
            error="the recognizer did not answer",
            attempts=3,
            acquisition_id=new_id(),
            acquire_time=T0 + timedelta(seconds=5, microseconds=1),
            delay_time=T0 + timedelta(seconds=10, microseconds=999999),
            dedup_key="tg:42:AgADxyz",
            upload_digest=DIGEST,
            short=True,
            owner=DIGEST,
            ended=T0 + timedelta(seconds=20, microseconds=3),
            callback_url="https://hooks.example.com/done?sig=ключ",
            created=T0,
            updated=T0,
        )
        await create(clock, repo, job)
        assert await repo.get(job.id) == job

    async def test_minimal_job_roundtrips(self, clock: ManualClock, repo: JobRepository) -> None:
        """A job with every optional field empty comes back with them empty, not as zero or ''."""
        job = Job(id=new_id(), state=State.CONVERT, origin=Origin.http(), created=T0, updated=T0)
        await create(clock, repo, job)
        assert await repo.get(job.id) == job

    async def test_times_keep_their_instant_in_any_timezone(
        self, clock: ManualClock, repo: JobRepository
    ) -> None:
        """A time given with another UTC offset is the same instant, in storage and in order."""
        plus_three = timezone(timedelta(hours=3))
        # 11:00+03:00 is 08:00 UTC: older than the UTC job although its wall clock reads later.
        early = make_job(created=datetime(2026, 3, 1, 11, 0, tzinfo=plus_three))
        late = make_job(created=datetime(2026, 3, 1, 9, 0, tzinfo=UTC))
        await stored(clock, repo, late, early)
        assert (await repo.get(early.id)).created == early.created
        first = await acquire(clock, repo)
        assert first is not None
        assert first.id == early.id

    async def test_get_unknown_raises_job_not_found(self, repo: JobRepository) -> None:
        """An unknown id is the core's JobNotFound, which the API turns into 404."""
        with pytest.raises(JobNotFound):
            await repo.get(new_id())

    async def test_get_owned_by_another_owner_is_job_not_found(
        self, clock: ManualClock, repo: JobRepository
    ) -> None:
        """``owned_by`` filters in the store: another owner's job is JobNotFound, like no job."""
        mine = make_job(owner=DIGEST)
        anonymous = make_job()
        await stored(clock, repo, mine, anonymous)
        assert await repo.get(mine.id, owned_by=DIGEST) == mine
        assert await repo.get(mine.id) == mine
        other = "0" * 64
        for job_id, owner in ((mine.id, other), (anonymous.id, DIGEST), (new_id(), DIGEST)):
            with pytest.raises(JobNotFound):
                await repo.get(job_id, owned_by=owner)

    async def test_dedup_key_returns_the_first_job(
        self, clock: ManualClock, repo: JobRepository
    ) -> None:
        """A retried intake with the same dedup key gets the first job back, marked not new."""
        first = make_job(dedup_key="idem-1")
        await create(clock, repo, first)
        again = make_job(dedup_key="idem-1", created=T0 + timedelta(seconds=1))
        assert await create(clock, repo, again) == (first, False)

    async def test_dedup_duplicate_stores_nothing(
        self, clock: ManualClock, repo: JobRepository
    ) -> None:
        """A duplicate stores neither its job nor its file records."""
        first = make_job(dedup_key="idem-2")
        await create(clock, repo, first, [make_file(id=first.source_file_id)])
        again = make_job(dedup_key="idem-2")
        again_file = make_file(id=again.source_file_id)
        await create(clock, repo, again, [again_file])
        with pytest.raises(JobNotFound):
            await repo.get(again.id)
        with pytest.raises(FileNotFound):
            await repo.get_file(again_file.id)
        assert await repo.count_by_state() == {State.CONVERT: 1}

    async def test_find_by_dedup_key(self, clock: ManualClock, repo: JobRepository) -> None:
        """An intake can look a dedup key up before receiving anything: the first job, or None."""
        assert await repo.find_by_dedup_key("idem-3") is None
        first = make_job(dedup_key="idem-3")
        await create(clock, repo, first)
        assert await repo.find_by_dedup_key("idem-3") == first
        assert await repo.find_by_dedup_key("idem-4") is None

    async def test_find_by_dedup_key_sees_saved_changes(
        self, clock: ManualClock, repo: JobRepository
    ) -> None:
        """The looked-up job is the stored one as it is now, not as it was created."""
        first = make_job(dedup_key="idem-5")
        await create(clock, repo, first)
        failed = transition(first, State.FAILED, now=T0, error="no audio")
        await repo.save_if_unchanged(failed, seen=first)
        found = await repo.find_by_dedup_key("idem-5")
        assert found is not None
        assert found.state is State.FAILED

    async def test_upload_digest_comes_back_with_the_first_job(
        self, clock: ManualClock, repo: JobRepository
    ) -> None:
        """A retry sees the digest its key was first used with, through create, find and a step."""
        first = make_job(dedup_key="idem-6", upload_digest=DIGEST)
        await create(clock, repo, first)
        again = make_job(dedup_key="idem-6", upload_digest="0" * 64)
        answer, is_new = await create(clock, repo, again)
        assert (answer.upload_digest, is_new) == (DIGEST, False)
        leased = await acquire(clock, repo, acquisition_id="lease-6")
        assert leased is not None
        assert leased.upload_digest == DIGEST
        failed = transition(leased, State.FAILED, now=T0, error="no audio")
        await repo.save_if_held(failed, acquisition_id="lease-6")
        found = await repo.find_by_dedup_key("idem-6")
        assert found is not None
        assert found.upload_digest == DIGEST

    async def test_jobs_without_dedup_key_never_collide(
        self, clock: ManualClock, repo: JobRepository
    ) -> None:
        """Two jobs without a dedup key are two jobs; a missing key is not a shared key."""
        first, second = make_job(), make_job()
        assert await create(clock, repo, first) == (first, True)
        assert await create(clock, repo, second) == (second, True)
        assert await repo.count_by_state() == {State.CONVERT: 2}

    async def test_create_stores_its_files(self, clock: ManualClock, repo: JobRepository) -> None:
        """The file records given to create are stored with the job."""
        source = make_file()
        extra = make_file(extension=".ogg")
        job = make_job(source_file_id=source.id)
        await create(clock, repo, job, [source, extra])
        assert await repo.get_file(source.id) == source
        assert await repo.get_file(extra.id) == extra

    async def test_create_with_a_used_id_is_refused(
        self, clock: ManualClock, repo: JobRepository
    ) -> None:
        """A second job with a stored id raises Conflict and leaves the first untouched."""
        first = make_job()
        await create(clock, repo, first)
        with pytest.raises(Conflict):
            await create(clock, repo, attrs.evolve(first, text="impostor"))
        assert await repo.get(first.id) == first

    # -- file records --------------------------------------------------------

    async def test_file_record_roundtrips(self, repo: JobRepository) -> None:
        """Every field of a file record, object key and microseconds included, comes back."""
        record = make_file(
            location=Location.S3,
            object_key="transcriber/abc.ogg",
            size=8 * 1024**3,
            extension=".ogg",
            created=T0 + timedelta(microseconds=3),
        )
        await repo.put_file(record)
        assert await repo.get_file(record.id) == record

    async def test_put_file_replaces(self, repo: JobRepository) -> None:
        """Putting a record with a stored id replaces it: a retried step leaves one record."""
        record = make_file()
        await repo.put_file(record)
        replaced = attrs.evolve(record, size=99, created=T0 + timedelta(seconds=1))
        await repo.put_file(replaced)
        assert await repo.get_file(record.id) == replaced

    async def test_get_file_unknown_raises_file_not_found(self, repo: JobRepository) -> None:
        """An unknown file id is the core's FileNotFound, which a step turns into a failed job."""
        with pytest.raises(FileNotFound):
            await repo.get_file(new_id())

    async def test_delete_file_removes_it(self, repo: JobRepository) -> None:
        """A deleted record is gone."""
        record = make_file()
        await repo.put_file(record)
        await repo.delete_file(record.id)
        with pytest.raises(FileNotFound):
            await repo.get_file(record.id)

    async def test_delete_file_is_idempotent(self, repo: JobRepository) -> None:
        """Deleting a missing record is quiet, so a retried cleanup cannot fail."""
        record = make_file()
        await repo.put_file(record)
        await repo.delete_file(record.id)
        await repo.delete_file(record.id)
        await repo.delete_file(new_id())

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
        job = make_job(delay_time=NOW + _MICROSECOND)
        await create(clock, repo, job)
        assert await acquire(clock, repo) is None
        assert await repo.get(job.id) == job

    async def test_past_delay_is_eligible(self, clock: ManualClock, repo: JobRepository) -> None:
        """A job whose delay has passed is handed out."""
        await create(clock, repo, make_job(delay_time=NOW - _MICROSECOND))
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
        assert await acquire(clock, repo, now=NOW + LEASE - _MICROSECOND) is None

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
        await acquire(clock, repo, now=NOW + _MICROSECOND)
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
        clock.set(T0 + _MICROSECOND)
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
        assert await acquire(clock, repo, now=due - _MICROSECOND) is None
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

    # -- queue_position ----------------------------------------------------------

    async def test_queue_position_counts_the_jobs_ahead(
        self, clock: ManualClock, repo: JobRepository
    ) -> None:
        """A long job counts every waiting job ahead of it in its state, in queue order."""
        jobs = [make_job(created=T0 + timedelta(seconds=n), short=n == 1) for n in range(3)]
        other_state = make_job(created=T0 - timedelta(seconds=1), state=State.CHECK)
        await stored(clock, repo, *jobs, other_state)
        positions = [await position(clock, repo, job.id) for job in jobs]
        assert positions == [0, 0, 2]

    async def test_queue_position_of_a_short_job_counts_its_lane(
        self, clock: ManualClock, repo: JobRepository
    ) -> None:
        """A short job waits only behind short jobs: the express loop passes the long ones."""
        early_short = make_job(created=T0, short=True)
        long_jobs = [make_job(created=T0 + timedelta(seconds=n)) for n in (1, 2)]
        short = make_job(created=T0 + timedelta(seconds=3), short=True)
        await stored(clock, repo, early_short, *long_jobs, short)
        assert await position(clock, repo, short.id) == 1

    async def test_queue_position_ties_break_by_id(
        self, clock: ManualClock, repo: JobRepository
    ) -> None:
        """Two jobs created at the same instant: the smaller id is ahead."""
        first = make_job(id=new_id("a-"))
        second = make_job(id=new_id("b-"))
        await stored(clock, repo, second, first)
        assert await position(clock, repo, first.id) == 0
        assert await position(clock, repo, second.id) == 1

    async def test_running_jobs_are_not_ahead(
        self, clock: ManualClock, repo: JobRepository
    ) -> None:
        """A job under a live lease is running: not counted ahead, and has no position itself."""
        running = make_job(created=T0)
        waiting = make_job(created=T0 + timedelta(seconds=1))
        await stored(clock, repo, running, waiting)
        assert await acquire(clock, repo) is not None
        assert await position(clock, repo, running.id) is None
        assert await position(clock, repo, waiting.id) == 0
        # Once that lease has expired the job waits again, ahead of the other.
        assert await position(clock, repo, waiting.id, lease=timedelta(0)) == 1

    @pytest.mark.parametrize("state", sorted(TERMINAL_STATES))
    async def test_an_ended_job_has_no_queue_position(
        self, clock: ManualClock, repo: JobRepository, state: State
    ) -> None:
        """A job in a terminal state waits for nothing."""
        job = make_job(state=state)
        await create(clock, repo, job)
        assert await position(clock, repo, job.id) is None

    async def test_queue_position_counts_at_most_the_limit(
        self, clock: ManualClock, repo: JobRepository
    ) -> None:
        """Past ``QUEUE_POSITION_LIMIT`` jobs ahead the count stops: a status read stays cheap."""
        ahead = [
            make_job(created=T0 + timedelta(microseconds=n))
            for n in range(QUEUE_POSITION_LIMIT + 3)
        ]
        last = make_job(created=T0 + timedelta(seconds=1))
        await stored(clock, repo, *ahead, last)
        assert await position(clock, repo, last.id) == QUEUE_POSITION_LIMIT
        assert (
            await position(clock, repo, ahead[QUEUE_POSITION_LIMIT - 1].id)
            == QUEUE_POSITION_LIMIT - 1
        )

    async def test_queue_position_of_an_unknown_job(
        self, clock: ManualClock, repo: JobRepository
    ) -> None:
        """An id no job has raises JobNotFound, like get."""
        with pytest.raises(JobNotFound):
            await position(clock, repo, new_id())

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

    # -- save_if_unchanged (owner edits) ------------------------------------------

    async def test_owner_save_overwrites_and_clears_the_lease(
        self, clock: ManualClock, repo: JobRepository
    ) -> None:
        """An owner's edit of the job as read wins over a running step: its lease and save go."""
        job = make_job()
        await create(clock, repo, job)
        leased = await acquire(clock, repo, acquisition_id="lease-1")
        assert leased is not None
        edited = transition(leased, State.CONVERT, now=NOW, actor=Actor.OWNER)
        await repo.save_if_unchanged(edited, seen=leased)
        assert await repo.get(job.id) == edited
        with pytest.raises(LeaseLost):
            await repo.save_if_held(
                transition(leased, State.RECOGNIZE, now=NOW), acquisition_id="lease-1"
            )
        again = await acquire(clock, repo)
        assert again is not None
        assert again.attempts == 1

    async def test_owner_save_after_a_step_saved_is_refused(
        self, clock: ManualClock, repo: JobRepository
    ) -> None:
        """A step's result saved after the owner read the job is kept; the edit is JobChanged."""
        await create(clock, repo, make_job(state=State.RECOGNIZE))
        leased = await acquire(clock, repo, state=State.RECOGNIZE, acquisition_id="lease-1")
        assert leased is not None
        seen = await repo.get(leased.id)
        result = transition(leased, State.CHECK, now=NOW, operation_id="op-1")
        await repo.save_if_held(result, acquisition_id="lease-1")
        edited = transition(seen, State.FAILED, now=NOW, actor=Actor.OWNER, error="by hand")
        with pytest.raises(JobChanged):
            await repo.save_if_unchanged(edited, seen=seen)
        assert await repo.get(leased.id) == result

    async def test_owner_save_after_an_acquire_is_refused(
        self, clock: ManualClock, repo: JobRepository
    ) -> None:
        """A job leased after the owner read it is not edited behind the new holder's back."""
        job = make_job()
        await create(clock, repo, job)
        leased = await acquire(clock, repo, acquisition_id="lease-1")
        assert leased is not None
        edited = transition(job, State.DEAD, now=NOW, actor=Actor.OWNER, error="by hand")
        with pytest.raises(JobChanged):
            await repo.save_if_unchanged(edited, seen=job)
        assert await repo.get(job.id) == leased

    async def test_owner_save_after_a_renewal_is_refused(
        self, clock: ManualClock, repo: JobRepository
    ) -> None:
        """Any change to the stored job counts, a lease renewal too: the owner must reload."""
        await create(clock, repo, make_job())
        leased = await acquire(clock, repo, acquisition_id="lease-1")
        assert leased is not None
        await renew(clock, repo, leased.id, acquisition_id="lease-1", now=NOW + LEASE / 2)
        edited = transition(leased, State.DEAD, now=NOW, actor=Actor.OWNER, error="by hand")
        with pytest.raises(JobChanged):
            await repo.save_if_unchanged(edited, seen=leased)
        stored = await repo.get(leased.id)
        assert (stored.state, stored.acquire_time) == (State.CONVERT, NOW + LEASE / 2)

    async def test_save_if_unchanged_unknown_job_raises_job_not_found(
        self, repo: JobRepository
    ) -> None:
        """An owner's edit of a job that is gone is JobNotFound, and creates nothing."""
        job = make_job()
        with pytest.raises(JobNotFound):
            await repo.save_if_unchanged(job, seen=job)
        with pytest.raises(JobNotFound):
            await repo.get(job.id)

    async def test_save_if_unchanged_needs_the_same_job(
        self, clock: ManualClock, repo: JobRepository
    ) -> None:
        """An edit compared with another job's record is a programming error; it writes nothing."""
        first, second = make_job(), make_job()
        await create(clock, repo, first)
        await create(clock, repo, second)
        with pytest.raises(ValueError, match="same job"):
            await repo.save_if_unchanged(attrs.evolve(first, text="x"), seen=second)
        assert await repo.get(first.id) == first

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
        assert await acquire(clock, repo, now=due - _MICROSECOND) is None
        assert await states_ready(clock, repo, now=due - _MICROSECOND) == frozenset()
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

    # -- list_jobs and count_by_state ------------------------------------------

    async def test_list_jobs_newest_first(self, clock: ManualClock, repo: JobRepository) -> None:
        """The admin list shows the newest job first, ties broken by id descending."""
        # Ids sort against creation (oldest "c-", newest "0-"): an order by id alone fails.
        old = make_job(id=new_id("c-"), created=T0)
        tie_a = make_job(id=new_id("a-"), created=T0 + timedelta(seconds=1))
        tie_b = make_job(id=new_id("b-"), created=T0 + timedelta(seconds=1))
        new = make_job(id=new_id("0-"), created=T0 + timedelta(seconds=2))
        await stored(clock, repo, tie_a, old, new, tie_b)
        listed = await repo.list_jobs()
        assert [job.id for job in listed] == [new.id, tie_b.id, tie_a.id, old.id]

    async def test_list_jobs_filters_by_state(
        self, clock: ManualClock, repo: JobRepository
    ) -> None:
        """A state filter lists only that state's jobs, still newest first."""
        dead_old = make_job(id=new_id("b-"), state=State.DEAD, created=T0)
        dead_new = make_job(id=new_id("a-"), state=State.DEAD, created=T0 + timedelta(seconds=1))
        await stored(clock, repo, dead_old, make_job(), dead_new)
        listed = await repo.list_jobs(state=State.DEAD)
        assert [job.id for job in listed] == [dead_new.id, dead_old.id]
        assert await repo.list_jobs(state=State.FAILED) == []

    async def test_list_jobs_pages_with_limit_and_offset(
        self, clock: ManualClock, repo: JobRepository
    ) -> None:
        """Pages are contiguous and do not overlap."""
        # Later jobs get ids that sort earlier, so only the created order passes.
        jobs = [
            make_job(id=new_id(f"{9 - n}-"), created=T0 + timedelta(seconds=n)) for n in range(5)
        ]
        await stored(clock, repo, *jobs)
        newest_first = [job.id for job in reversed(jobs)]
        first = await repo.list_jobs(limit=2)
        second = await repo.list_jobs(limit=2, offset=2)
        last = await repo.list_jobs(limit=2, offset=4)
        assert [job.id for job in first + second + last] == newest_first
        assert await repo.list_jobs(limit=2, offset=5) == []

    async def test_count_by_state(self, clock: ManualClock, repo: JobRepository) -> None:
        """Counts per state, leaving out states without jobs."""
        await stored(
            clock,
            repo,
            make_job(),
            make_job(),
            make_job(state=State.CHECK),
            make_job(state=State.FAILED),
        )
        assert await repo.count_by_state() == {
            State.CONVERT: 2,
            State.CHECK: 1,
            State.FAILED: 1,
        }

    async def test_count_by_state_of_an_empty_repository(self, repo: JobRepository) -> None:
        """An empty repository counts nothing, not zeros."""
        assert await repo.count_by_state() == {}

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
FILES_AGE = timedelta(days=7)
JOBS_AGE = timedelta(days=30)


class JobLifecycleContract:
    """Deletion, sweep leases and retention (ADR 36).

    Subclass and provide the fixtures ``repo`` and ``another_repo`` as for
    ``JobRepositoryContract`` (module docstring); an adapter's test class
    usually subclasses both contracts. Ages are judged by the store's clock.
    """

    @pytest.fixture
    def clock(self) -> ManualClock:
        """The store's clock; the adapter's fixtures build their repositories on it."""
        return ManualClock(NOW)

    async def _ended_job(
        self, repo: JobRepository, clock: ManualClock, *, parts: bool = False, **changes: object
    ) -> tuple[Job, list[FileRecord]]:
        """A done job with a recording, converted audio and, if asked, two parts with files."""
        now = clock.now()
        source, converted = make_file(created=now), make_file(created=now, extension=".ogg")
        job = make_job(created=now, state=State.CHECK, source_file_id=source.id, **changes)
        await create(clock, repo, job, [source, converted])
        files = [source, converted]
        leased = await acquire(clock, repo, State.CHECK, now=now, acquisition_id="lease-" + job.id)
        assert leased is not None
        if parts:
            part_files = [make_file(created=now) for _ in range(3)]
            for record in part_files:
                await repo.put_file(record)
            files.extend(part_files)
            stored_parts = [
                JobPart(
                    job_id=job.id,
                    index=0,
                    start=0.0,
                    end=5.0,
                    file_id=part_files[0].id,
                    storage_file_id=part_files[1].id,
                    text="one",
                ),
                JobPart(
                    job_id=job.id, index=1, start=5.0, end=9.0, file_id=part_files[2].id, text="two"
                ),
            ]
            await repo.save_parts_if_held(job.id, stored_parts, acquisition_id="lease-" + job.id)
        done = transition(leased, State.DONE, now=now, converted_file_id=converted.id, text="done")
        lease = "lease-" + job.id
        # As a worker saves an end: with the deliveries the core decides for it.
        await repo.save_if_held(done, acquisition_id=lease, deliveries=end_deliveries(done))
        return done, files

    # -- delete ------------------------------------------------------------------

    async def test_delete_takes_the_job_its_parts_and_file_records(
        self, repo: JobRepository, clock: ManualClock
    ) -> None:
        """A deleted job is gone with its parts and every file record it or its parts named."""
        job, files = await self._ended_job(repo, clock, parts=True)
        other, other_files = await self._ended_job(repo, clock)
        removed = await repo.delete_job(job.id)
        assert removed.jobs == (job.id,)
        assert sorted(removed.files, key=lambda f: f.id) == sorted(files, key=lambda f: f.id)
        with pytest.raises(JobNotFound):
            await repo.get(job.id)
        assert await repo.get_parts(job.id) == []
        for record in files:
            with pytest.raises(FileNotFound):
                await repo.get_file(record.id)
        assert await repo.get(other.id) == other
        for record in other_files:
            assert await repo.get_file(record.id) == record

    async def test_delete_of_an_unknown_or_deleted_job_is_not_found(
        self, repo: JobRepository, clock: ManualClock
    ) -> None:
        """Deleting twice hands the records out once; the second delete finds no job."""
        job, _ = await self._ended_job(repo, clock)
        await repo.delete_job(job.id)
        with pytest.raises(JobNotFound):
            await repo.delete_job(job.id)
        with pytest.raises(JobNotFound):
            await repo.delete_job("no-such-job")

    async def test_a_worker_holding_a_deleted_job_writes_nothing(
        self, repo: JobRepository, clock: ManualClock
    ) -> None:
        """Renew, save and part saves of a deleted job are LeaseLost and bring nothing back."""
        [job] = await stored(clock, repo, make_job(state=State.RECOGNIZE))
        leased = await acquire(clock, repo, State.RECOGNIZE, acquisition_id="lease-held")
        assert leased is not None
        await repo.delete_job(job.id)
        part = JobPart(job_id=job.id, index=0, start=0.0, end=1.0)
        with pytest.raises(LeaseLost):
            await renew(clock, repo, job.id, acquisition_id="lease-held", now=NOW)
        with pytest.raises(LeaseLost):
            await repo.save_parts_if_held(job.id, [part], acquisition_id="lease-held")
        done = transition(leased, State.CHECK, now=NOW, operation_id="op")
        with pytest.raises(LeaseLost):
            await repo.save_if_held(done, acquisition_id="lease-held")
        with pytest.raises(JobNotFound):
            await repo.get(job.id)
        assert await repo.get_parts(job.id) == []

    async def test_a_deleted_jobs_deliveries_go_with_it(
        self, repo: JobRepository, clock: ManualClock
    ) -> None:
        """A job deleted with its end's webhook still owed leaves no delivery behind to be sent."""
        job, _ = await self._ended_job(repo, clock, callback_url="https://hooks.example.com/done")
        assert await repo.pending_deliveries() != {}
        await repo.delete_job(job.id)
        assert await repo.pending_deliveries() == {}
        assert await repo.acquire_delivery(acquisition_id="lease-d", lease=LEASE) is None

    async def test_a_deleted_jobs_dedup_key_is_free_again(
        self, repo: JobRepository, clock: ManualClock
    ) -> None:
        """After a delete the same Idempotency-Key makes a new job: the old one is gone."""
        [job] = await stored(clock, repo, make_job(dedup_key="http::key"))
        await repo.delete_job(job.id)
        assert await repo.find_by_dedup_key("http::key") is None
        fresh = make_job(dedup_key="http::key")
        assert await create(clock, repo, fresh) == (fresh, True)

    # -- sweep lease -------------------------------------------------------------

    async def test_a_sweep_is_taken_once_until_its_lease_passes(
        self, repo: JobRepository, clock: ManualClock
    ) -> None:
        """take_sweep: True for the first caller, False while held, True again at its expiry."""
        lease = timedelta(minutes=30)
        assert await repo.take_sweep("retention", lease=lease) is True
        assert await repo.take_sweep("retention", lease=lease) is False
        assert await repo.take_sweep("other", lease=lease) is True
        clock.advance(lease - timedelta(microseconds=1))
        assert await repo.take_sweep("retention", lease=lease) is False
        clock.advance(timedelta(microseconds=1))
        assert await repo.take_sweep("retention", lease=lease) is True
        assert await repo.take_sweep("retention", lease=lease) is False

    async def test_concurrent_sweep_takers_have_one_winner(
        self, repo: JobRepository, another_repo: OpenAnother
    ) -> None:
        """Of many takers asking at once, on four instances, exactly one gets the sweep."""
        takers = [repo, *[await another_repo() for _ in range(3)]]
        won = await asyncio.gather(
            *(
                taker.take_sweep("retention", lease=timedelta(hours=1))
                for taker in takers
                for _ in range(2)
            )
        )
        assert sorted(won) == [False] * 7 + [True]

    # -- retention ---------------------------------------------------------------

    async def test_files_go_at_their_age_and_not_before(
        self, repo: JobRepository, clock: ManualClock
    ) -> None:
        """Ended FILES_AGE ago: the files and references go, the job and transcript stay."""
        job, files = await self._ended_job(repo, clock, parts=True)
        [running] = await stored(clock, repo, make_job(created=clock.now()))
        clock.advance(FILES_AGE - timedelta(microseconds=1))
        assert await repo.remove_ended_files(age=FILES_AGE, limit=10) == Removed()
        clock.advance(timedelta(microseconds=1))
        removed = await repo.remove_ended_files(age=FILES_AGE, limit=10)
        assert removed.jobs == (job.id,)
        assert sorted(removed.files, key=lambda f: f.id) == sorted(files, key=lambda f: f.id)
        kept = await repo.get(job.id)
        assert kept.text == "done"
        assert kept.file_ids() == ()
        assert kept.ended == job.ended
        assert [(p.file_id, p.storage_file_id) for p in await repo.get_parts(job.id)] == [
            (None, None),
            (None, None),
        ]
        assert (await repo.get(running.id)).source_file_id == running.source_file_id
        assert await repo.remove_ended_files(age=FILES_AGE, limit=10) == Removed()

    async def test_jobs_go_at_their_age_and_not_before(
        self, repo: JobRepository, clock: ManualClock
    ) -> None:
        """Ended JOBS_AGE ago: the job goes with its parts and any file records left."""
        job, files = await self._ended_job(repo, clock, parts=True)
        clock.advance(JOBS_AGE - timedelta(microseconds=1))
        assert await repo.remove_ended_jobs(age=JOBS_AGE, limit=10) == Removed()
        assert await repo.get(job.id) == job
        clock.advance(timedelta(microseconds=1))
        removed = await repo.remove_ended_jobs(age=JOBS_AGE, limit=10)
        assert removed.jobs == (job.id,)
        assert len(removed.files) == len(files)
        with pytest.raises(JobNotFound):
            await repo.get(job.id)
        assert await repo.get_parts(job.id) == []

    async def test_sweeps_go_oldest_ended_first_in_batches(
        self, repo: JobRepository, clock: ManualClock
    ) -> None:
        """A batch takes at most ``limit`` jobs, longest ended first; the next takes the rest."""
        ended = []
        for _ in range(5):
            job, _ = await self._ended_job(repo, clock)
            ended.append(job.id)
            clock.advance(timedelta(minutes=1))
        clock.advance(JOBS_AGE)
        first = await repo.remove_ended_jobs(age=JOBS_AGE, limit=2)
        second = await repo.remove_ended_jobs(age=JOBS_AGE, limit=2)
        third = await repo.remove_ended_jobs(age=JOBS_AGE, limit=2)
        assert first.jobs + second.jobs + third.jobs == tuple(ended)
        assert len(third.jobs) == 1

    @pytest.mark.parametrize(
        ("sweep", "age"), [("remove_ended_jobs", JOBS_AGE), ("remove_ended_files", FILES_AGE)]
    )
    async def test_concurrent_sweeps_remove_each_thing_once(
        self,
        repo: JobRepository,
        clock: ManualClock,
        another_repo: OpenAnother,
        sweep: str,
        age: timedelta,
    ) -> None:
        """Job or file sweeps at once on three instances hand each job and file to exactly one."""
        files: list[str] = []
        for _ in range(12):
            _, made = await self._ended_job(repo, clock, parts=True)
            files.extend(record.id for record in made)
        clock.advance(age)
        sweepers = [repo, await another_repo(), await another_repo()]
        results: list[Removed] = await asyncio.gather(
            *(getattr(sweeper, sweep)(age=age, limit=3) for sweeper in sweepers for _ in range(2))
        )
        swept = [record.id for result in results for record in result.files]
        assert sorted(swept) == sorted(files)
        jobs = [job_id for result in results for job_id in result.jobs]
        assert len(jobs) == len(set(jobs)) == 12

    async def test_a_revived_job_is_not_swept(
        self, repo: JobRepository, clock: ManualClock
    ) -> None:
        """A job sent back to a step has no end time: retention leaves it alone."""
        job, _ = await self._ended_job(repo, clock)
        revived = transition(job, State.CONVERT, now=clock.now(), actor=Actor.OWNER)
        assert revived.ended is None
        await repo.save_if_unchanged(revived, seen=job)
        clock.advance(JOBS_AGE)
        assert await repo.remove_ended_files(age=FILES_AGE, limit=10) == Removed()
        assert await repo.remove_ended_jobs(age=JOBS_AGE, limit=10) == Removed()
