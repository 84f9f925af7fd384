"""The ``Jobs`` role: taking a job in, dedup, reading it back, the owner's edits, queue positions.

Subclass with the fixtures ``repo`` and ``another_repo`` (``job_repository``'s docstring).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import attrs
import pytest

from transcriber_contracts.repository_support import (
    DIGEST,
    LEASE,
    NOW,
    T0,
    RepositorySuite,
    acquire,
    create,
    make_file,
    make_job,
    new_id,
    position,
    renew,
    stored,
)
from transcriber_core.clocks import ManualClock
from transcriber_core.entities import (
    TERMINAL_STATES,
    Diarization,
    Job,
    Origin,
    Speaker,
    SpeakerPrint,
    State,
    Turn,
    Word,
)
from transcriber_core.errors import Conflict, FileNotFound, JobChanged, JobNotFound, LeaseLost
from transcriber_core.languages import Task
from transcriber_core.people import PERSON_ID_LENGTH, person_owner
from transcriber_core.policy import QUEUE_POSITION_LIMIT
from transcriber_core.ports import JobRepository
from transcriber_core.transitions import Actor, transition


class JobsContract(RepositorySuite):
    """Subclass and provide the fixtures ``repo`` and ``another_repo``."""

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

    async def test_speakers_voices_and_prints_roundtrip(
        self, clock: ManualClock, repo: JobRepository
    ) -> None:
        """Speakers with their voice ids and their prints come back exactly, saved and edited."""
        first = SpeakerPrint(speaker="S1", vector=(0.6, -0.8, 1e-9, 0.1234567890123))
        job = make_job(
            speakers_wanted=2,
            speakers=(
                Speaker(id="S1", name="Diane", voice_id=new_id()),
                Speaker(id="S2", name="Speaker 2"),
            ),
            prints=(first, SpeakerPrint(speaker="S2", vector=(1.0, 0.0, 0.0, 0.0))),
        )
        await create(clock, repo, job)
        read = await repo.get(job.id)
        assert (read.speakers, read.prints) == (job.speakers, job.prints)
        edited = attrs.evolve(read, prints=(first,), speakers=job.speakers[:1])
        await repo.save_if_unchanged(edited, seen=read)
        again = await repo.get(job.id)
        assert (again.speakers, again.prints) == (job.speakers[:1], (first,))

    async def test_speakers_heard_early_roundtrip(
        self, clock: ManualClock, repo: JobRepository
    ) -> None:
        """What the diarizer heard beside the parts (ADR 89) comes back exactly, and clears."""
        heard = Diarization(
            turns=(
                Turn(speaker="spk 0", start=0.0, end=12.345678),
                Turn(speaker="спикер", start=12.5, end=3600.0),
            ),
            prints={"spk 0": (0.6, -0.8, 1e-9), "спикер": (1.0, 0.0, 0.0)},
        )
        job = make_job(speakers_wanted=0, heard=heard)
        await create(clock, repo, job)
        read = await repo.get(job.id)
        assert read.heard == heard
        await repo.save_if_unchanged(attrs.evolve(read, heard=None), seen=read)
        assert (await repo.get(job.id)).heard is None

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

    async def test_get_anonymous_never_finds_a_persons_job(
        self, clock: ManualClock, repo: JobRepository
    ) -> None:
        """``anonymous`` (an open API's caller) finds any job but a person's: JobNotFound."""
        persons = make_job(owner=person_owner("a" * PERSON_ID_LENGTH))
        tokens, nobodys = make_job(owner=DIGEST), make_job()
        await stored(clock, repo, persons, tokens, nobodys)
        assert await repo.get(tokens.id, anonymous=True) == tokens
        assert await repo.get(nobodys.id, anonymous=True) == nobodys
        assert await repo.get(persons.id) == persons
        assert await repo.get(persons.id, owned_by=persons.owner) == persons
        for job_id in (persons.id, new_id()):
            with pytest.raises(JobNotFound):
                await repo.get(job_id, anonymous=True)

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
