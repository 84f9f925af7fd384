"""``MemoryJobRepository``: jobs and file records in dicts, with the queue semantics of SQLite."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from datetime import datetime, timedelta

import attrs

from transcriber_adapters.checks import (
    check_edit,
    check_page,
    check_parts,
    check_progress,
    check_search_limit,
)
from transcriber_adapters.memory.database import MemoryDatabase, database_for
from transcriber_adapters.memory.outbox import MemoryOutbox
from transcriber_core.entities import (
    PROGRESS_STATES,
    STEP_STATES,
    SUMMARY_PREVIEW_CHARS,
    Correction,
    FileRecord,
    Job,
    JobPart,
    JobSummary,
    NewDelivery,
    Progress,
    State,
)
from transcriber_core.errors import Conflict, FileNotFound, JobChanged, JobNotFound, LeaseLost
from transcriber_core.people import is_person_owner
from transcriber_core.policy import QUEUE_POSITION_LIMIT
from transcriber_core.ports import Clock, Ready, Removed
from transcriber_core.search import Hit, SearchQuery, hit_of
from transcriber_core.transitions import check_acquirable


class MemoryJobRepository(MemoryOutbox):
    """The job repository in memory: for demos, tests and a single process.

    Behaves as ``SqliteJobRepository`` does, down to the errors: a job that
    no longer exists is ``LeaseLost`` for ``renew`` and ``save_if_held``
    and ``JobNotFound`` for ``save_if_unchanged``; an id or dedup key
    already used by another job is a ``Conflict``.
    The database's lock makes every method atomic, from tasks and from
    threads alike, across every repository on that ``database``. Time is
    the database's ``clock`` (default: the system's). Stored jobs and
    records are the frozen objects given, with the store's stamps; nothing
    else is copied. The outbox's deliveries (ADR 35) are kept on the database too.
    """

    def __init__(
        self, clock: Clock | None = None, *, database: MemoryDatabase | None = None
    ) -> None:
        self._db = database_for(clock, database)
        self._lock = self._db.lock
        self._jobs = self._db.jobs
        self._files = self._db.files
        self._dedup = self._db.dedup
        self._parts = self._db.parts
        self._sweeps = self._db.sweeps
        #: Names of the methods called so far, in order, for tests that need to look.
        self.calls: list[str] = []

    @property
    def database(self) -> MemoryDatabase:
        """The data this repository works on; give it to another repository to share it."""
        return self._db

    def reset(self) -> None:
        """Forget every job, file record and recorded call (of every store on the database)."""
        self._db.clear()
        with self._lock:
            self.calls.clear()

    async def create(
        self, job: Job, files: Sequence[FileRecord] = (), deliveries: Sequence[NewDelivery] = ()
    ) -> tuple[Job, bool]:
        """Store a new job with its file records and deliveries, unless its dedup key is used."""
        with self._lock:
            self.calls.append("create")
            if job.dedup_key is not None and job.dedup_key in self._dedup:
                return self._jobs[self._dedup[job.dedup_key]], False
            if job.id in self._jobs:
                raise Conflict
            now = self._db.clock.now()
            job = job.as_created(now)
            self._jobs[job.id] = job
            if job.dedup_key is not None:
                self._dedup[job.dedup_key] = job.id
            for record in files:
                self._files[record.id] = record
            self._write_deliveries(job.id, deliveries)
            return job, True

    async def find_by_dedup_key(self, dedup_key: str) -> Job | None:
        """The job that first used ``dedup_key``, or None."""
        with self._lock:
            self.calls.append("find_by_dedup_key")
            job_id = self._dedup.get(dedup_key)
            return None if job_id is None else self._jobs[job_id]

    async def get(
        self, job_id: str, *, owned_by: str | None = None, anonymous: bool = False
    ) -> Job:
        """The job with this id (and owner, or not a person's, when asked); ``JobNotFound``."""
        with self._lock:
            self.calls.append("get")
            job = self._jobs.get(job_id)
            if job is None or (owned_by is not None and job.owner != owned_by):
                raise JobNotFound()
            if anonymous and is_person_owner(job.owner):
                raise JobNotFound()
            return job

    async def acquire(
        self,
        state: State,
        *,
        acquisition_id: str,
        lease: timedelta,
        short_only: bool = False,
    ) -> Job | None:
        """Lease the oldest eligible job in ``state`` (only short ones with ``short_only``).

        A terminal ``state`` is refused with ``ValueError``: no job there may get a lease.
        """
        check_acquirable(state)
        with self._lock:
            self.calls.append("acquire")
            now = self._db.clock.now()
            lease_cutoff = now - lease
            candidates = [
                job
                for job in self._jobs.values()
                if job.state == state
                and (job.short or not short_only)
                and _eligible(job, now, lease_cutoff)
            ]
            if not candidates:
                return None
            oldest = min(candidates, key=lambda job: (job.created, job.id))
            leased = attrs.evolve(
                oldest,
                acquisition_id=acquisition_id,
                acquire_time=now,
                attempts=oldest.attempts + 1,
                updated=now,
            )
            self._jobs[leased.id] = leased
            return leased

    async def queue_position(self, job_id: str, *, lease: timedelta) -> int | None:
        """Jobs waiting ahead of this one in its step and lane; None when it is not waiting."""
        with self._lock:
            self.calls.append("queue_position")
            lease_cutoff = self._db.clock.now() - lease
            job = self._jobs.get(job_id)
            if job is None:
                raise JobNotFound()
            return self._position(job, lease_cutoff)

    def _position(self, job: Job, lease_cutoff: datetime) -> int | None:
        """``queue_position`` of a job read under the lock."""
        if job.state not in STEP_STATES or _leased(job, lease_cutoff):
            return None
        ahead = sum(
            1
            for other in self._jobs.values()
            if other.state == job.state
            and (other.short or not job.short)
            and (other.created, other.id) < (job.created, job.id)
            and not _leased(other, lease_cutoff)
        )
        return min(ahead, QUEUE_POSITION_LIMIT)

    async def renew(self, job_id: str, *, acquisition_id: str) -> None:
        """Move the lease's ``acquire_time`` to the store's now; ``LeaseLost`` if not held."""
        with self._lock:
            self.calls.append("renew")
            job = self._jobs.get(job_id)
            if job is None or job.acquisition_id != acquisition_id:
                raise LeaseLost()
            self._jobs[job_id] = attrs.evolve(job, acquire_time=self._db.clock.now())

    async def save_if_held(
        self,
        job: Job,
        *,
        acquisition_id: str,
        delay: timedelta | None = None,
        deliveries: Sequence[NewDelivery] = (),
    ) -> None:
        """Write every field of ``job`` and ``deliveries`` if leased by ``acquisition_id``.

        Else ``LeaseLost``, writing nothing. With ``delay``, ``delay_time`` is
        the store's now plus ``delay``.
        """
        with self._lock:
            self.calls.append("save_if_held")
            stored = self._jobs.get(job.id)
            if stored is None or stored.acquisition_id != acquisition_id:
                raise LeaseLost()
            if delay is not None:
                job = attrs.evolve(job, delay_time=self._db.clock.now() + delay)
            self._replace(stored, job)
            self._write_deliveries(job.id, deliveries)

    async def save_progress_if_held(
        self,
        job_id: str,
        seconds_done: float,
        *,
        acquisition_id: str,
        begun: timedelta | None = None,
        total: float | None = None,
        deliveries: Sequence[NewDelivery] = (),
    ) -> None:
        """Note the job's progress and ``deliveries`` if leased by ``acquisition_id``."""
        check_progress(seconds_done)
        with self._lock:
            self.calls.append("save_progress_if_held")
            stored = self._jobs.get(job_id)
            if stored is None or stored.acquisition_id != acquisition_id:
                raise LeaseLost()
            now = self._db.clock.now()
            before = stored.progress
            if begun is not None:
                started = now - begun
            else:
                started = now if before is None else before.started
            progress = Progress(
                seconds_done=seconds_done, total=total, started=started, updated=now
            )
            self._jobs[job_id] = attrs.evolve(stored, progress=progress)
            self._write_deliveries(job_id, deliveries)

    async def save_if_unchanged(self, job: Job, *, seen: Job) -> None:
        """Write ``job`` if the stored job still equals ``seen``; else raise ``JobChanged``."""
        check_edit(job, seen)
        with self._lock:
            self.calls.append("save_if_unchanged")
            stored = self._jobs.get(job.id)
            if stored is None:
                raise JobNotFound()
            if stored != seen:
                raise JobChanged()
            self._replace(stored, job)

    async def save_correction(self, job_id: str, correction: Correction, *, version: int) -> Job:
        """Write ``correction`` if the done job is still at ``version``; else ``JobChanged``."""
        with self._lock:
            self.calls.append("save_correction")
            stored = self._jobs.get(job_id)
            if stored is None:
                raise JobNotFound()
            if stored.state is not State.DONE or stored.edit_version != version:
                raise JobChanged()
            saved = attrs.evolve(
                stored,
                text=correction.text,
                words=correction.words,
                original_text=correction.original_text,
                original_words=correction.original_words,
                edit_version=stored.edit_version + 1,
                updated=self._db.clock.now(),
            )
            self._jobs[job_id] = saved
            return saved

    async def save_title(self, job_id: str, title: str | None) -> Job:
        """Write the job's title whatever its state or lease; ``JobNotFound`` when gone."""
        with self._lock:
            self.calls.append("save_title")
            stored = self._jobs.get(job_id)
            if stored is None:
                raise JobNotFound()
            saved = attrs.evolve(stored, title=title, updated=self._db.clock.now())
            self._jobs[job_id] = saved
            return saved

    async def ready_states(self, *, lease: timedelta) -> Ready:
        """The step states that have at least one eligible job, and whether a delivery is due."""
        with self._lock:
            self.calls.append("ready_states")
            now = self._db.clock.now()
            lease_cutoff = now - lease
            states = frozenset(
                job.state
                for job in self._jobs.values()
                if job.state in STEP_STATES and _eligible(job, now, lease_cutoff)
            )
            parts_due = any(
                _part_eligible(part, now, lease_cutoff)
                for job_id, parts in self._parts.items()
                if (job := self._jobs.get(job_id)) is not None and job.state is State.CHECK
                for part in parts.values()
            )
            return Ready(
                states=states,
                delivery_due=bool(self._eligible(now, lease_cutoff)),
                parts_due=parts_due,
            )

    async def put_file(self, record: FileRecord) -> None:
        """Insert the file record, or replace the one with the same id."""
        with self._lock:
            self.calls.append("put_file")
            self._files[record.id] = record

    async def get_file(self, file_id: str) -> FileRecord:
        """The file record with this id; raises ``FileNotFound``."""
        with self._lock:
            self.calls.append("get_file")
            try:
                return self._files[file_id]
            except KeyError:
                raise FileNotFound() from None

    async def delete_file(self, file_id: str) -> None:
        """Remove the file record; nothing happens when it does not exist."""
        with self._lock:
            self.calls.append("delete_file")
            self._files.pop(file_id, None)

    async def list_jobs(
        self, *, state: State | None = None, limit: int = 50, offset: int = 0
    ) -> list[Job]:
        """Jobs newest first (``created``, then ``id``, descending), optionally in one state."""
        check_page(limit, offset)
        with self._lock:
            self.calls.append("list_jobs")
            jobs = [job for job in self._jobs.values() if state is None or job.state == state]
        jobs.sort(key=lambda job: (job.created, job.id), reverse=True)
        return jobs[offset : offset + limit]

    async def list_owned_jobs(self, owner: str, *, limit: int = 50, offset: int = 0) -> list[Job]:
        """The jobs stored with ``owner`` newest first."""
        check_page(limit, offset)
        with self._lock:
            self.calls.append("list_owned_jobs")
            jobs = [job for job in self._jobs.values() if job.owner == owner]
        jobs.sort(key=lambda job: (job.created, job.id), reverse=True)
        return jobs[offset : offset + limit]

    async def list_owned_summaries(
        self, owner: str, *, lease: timedelta, limit: int = 50, offset: int = 0
    ) -> list[JobSummary]:
        """The live view of the owner's page of jobs, under one hold of the lock."""
        check_page(limit, offset)
        with self._lock:
            self.calls.append("list_owned_summaries")
            lease_cutoff = self._db.clock.now() - lease
            jobs = sorted(
                (job for job in self._jobs.values() if job.owner == owner),
                key=lambda job: (job.created, job.id),
                reverse=True,
            )[offset : offset + limit]
            return [self._summary(job, lease_cutoff) for job in jobs]

    def _summary(self, job: Job, lease_cutoff: datetime) -> JobSummary:
        parts = self._parts.get(job.id, {}).values()
        return JobSummary(
            id=job.id,
            state=job.state,
            created=job.created,
            updated=job.updated,
            duration=job.duration,
            preview=None if job.text is None else job.text[:SUMMARY_PREVIEW_CHARS],
            error=job.error if job.state.is_terminal else None,
            progress=job.progress if job.state in PROGRESS_STATES else None,
            queue_position=self._position(job, lease_cutoff),
            parts_done=sum(part.done for part in parts),
            parts_total=len(parts),
            title=job.title,
        )

    async def search(self, owner: str, query: SearchQuery, *, limit: int = 20) -> list[Hit]:
        """The owner's done transcripts that match, newest first: a scan with the core's rule.

        No index: every one of the owner's jobs is read, which is what a
        store in memory, for tests and demos, can afford.
        """
        check_search_limit(limit)
        if query.empty:
            return []
        with self._lock:
            self.calls.append("search")
            jobs = [
                job for job in self._jobs.values() if job.owner == owner and job.state == State.DONE
            ]
        jobs.sort(key=lambda job: (job.created, job.id), reverse=True)
        hits: list[Hit] = []
        for job in jobs:
            if job.text is None:
                continue
            hit = hit_of(
                query,
                job_id=job.id,
                created=job.created,
                text=job.text,
                word_texts=[word.text for word in job.words],
                word_starts=[word.start for word in job.words],
            )
            if hit is not None:
                hits.append(attrs.evolve(hit, title=job.title))
                if len(hits) == limit:
                    break
        return hits

    async def count_by_state(self) -> dict[State, int]:
        """How many jobs are in each state; states with none are left out."""
        with self._lock:
            self.calls.append("count_by_state")
            return dict(Counter(job.state for job in self._jobs.values()))

    async def get_parts(self, job_id: str) -> list[JobPart]:
        """The parts of a split job by index; empty for a job recognised whole."""
        with self._lock:
            self.calls.append("get_parts")
            parts = self._parts.get(job_id, {})
            return [parts[index] for index in sorted(parts)]

    async def save_parts_if_held(
        self, job_id: str, parts: Sequence[JobPart], *, acquisition_id: str
    ) -> None:
        """Write each part if the job is leased by ``acquisition_id``; else ``LeaseLost``."""
        check_parts(job_id, parts)
        with self._lock:
            self.calls.append("save_parts_if_held")
            stored = self._jobs.get(job_id)
            if stored is None or stored.acquisition_id != acquisition_id:
                raise LeaseLost()
            kept = self._parts.setdefault(job_id, {})
            for part in parts:
                kept[part.index] = part

    async def acquire_part(self, *, acquisition_id: str, lease: timedelta) -> JobPart | None:
        """Lease the next unfinished part of any job waiting in check; None when there is none."""
        with self._lock:
            self.calls.append("acquire_part")
            now = self._db.clock.now()
            candidates = [
                (job.created, job.id, part.index)
                for job_id, parts in self._parts.items()
                if (job := self._jobs.get(job_id)) is not None and job.state is State.CHECK
                for part in parts.values()
                if _part_eligible(part, now, now - lease)
            ]
            if not candidates:
                return None
            _, job_id, index = min(candidates)
            part = self._parts[job_id][index]
            leased = attrs.evolve(
                part, acquisition_id=acquisition_id, acquire_time=now, attempts=part.attempts + 1
            )
            self._parts[job_id][index] = leased
            return leased

    async def renew_part(self, job_id: str, index: int, *, acquisition_id: str) -> None:
        """Move the part's lease to the store's now; ``LeaseLost`` if not held."""
        with self._lock:
            self.calls.append("renew_part")
            part = self._parts.get(job_id, {}).get(index)
            if part is None or part.acquisition_id != acquisition_id:
                raise LeaseLost()
            self._parts[job_id][index] = attrs.evolve(part, acquire_time=self._db.clock.now())

    async def save_part_if_held(
        self, part: JobPart, *, acquisition_id: str, delay: timedelta | None = None
    ) -> bool:
        """Write the held part; a last finished part makes its job due at once (one lock)."""
        with self._lock:
            self.calls.append("save_part_if_held")
            parts = self._parts.get(part.job_id, {})
            stored = parts.get(part.index)
            if stored is None or stored.acquisition_id != acquisition_id:
                raise LeaseLost()
            now = self._db.clock.now()
            parts[part.index] = attrs.evolve(
                part,
                start=stored.start,
                end=stored.end,
                acquire_time=None if part.acquisition_id is None else stored.acquire_time,
                delay_time=part.delay_time if delay is None else now + delay,
            )
            if not part.finished:
                return False
            job = self._jobs.get(part.job_id)
            if job is None or job.state is not State.CHECK:
                return False
            if not part.failed and any(other.text is None for other in parts.values()):
                return False
            self._jobs[job.id] = attrs.evolve(job, delay_time=None)
            return True

    async def delete_job(self, job_id: str) -> Removed:
        """Delete the job, its parts and their file records at once; ``JobNotFound`` if none."""
        with self._lock:
            self.calls.append("delete_job")
            if job_id not in self._jobs:
                raise JobNotFound()
            return self._remove([job_id], delete_jobs=True)

    async def take_sweep(self, name: str, *, lease: timedelta) -> bool:
        """Take the sweep ``name`` for ``lease`` on this store's clock; False while held."""
        with self._lock:
            self.calls.append("take_sweep")
            now = self._db.clock.now()
            expires = self._sweeps.get(name)
            if expires is not None and expires > now:
                return False
            self._sweeps[name] = now + lease
            return True

    async def remove_ended_files(self, *, age: timedelta, limit: int) -> Removed:
        """Forget and delete the files of up to ``limit`` jobs ended more than ``age`` ago."""
        with self._lock:
            self.calls.append("remove_ended_files")
            ids = self._ended(self._db.clock.now() - age, limit, with_files=True)
            return self._remove(ids, delete_jobs=False)

    async def remove_ended_jobs(self, *, age: timedelta, limit: int) -> Removed:
        """Delete up to ``limit`` jobs ended more than ``age`` ago, with parts and files."""
        with self._lock:
            self.calls.append("remove_ended_jobs")
            ids = self._ended(self._db.clock.now() - age, limit, with_files=False)
            return self._remove(ids, delete_jobs=True)

    def _ended(self, cutoff: datetime, limit: int, *, with_files: bool) -> list[str]:
        """Ids of jobs ended by ``cutoff``, oldest ended first; with files only, if asked."""
        ended = [
            job
            for job in self._jobs.values()
            if job.ended is not None and job.ended <= cutoff and (not with_files or job.file_ids())
        ]
        ended.sort(key=lambda job: (job.ended, job.id))
        return [job.id for job in ended[:limit]]

    def _remove(self, job_ids: list[str], *, delete_jobs: bool) -> Removed:
        """Delete the jobs' (and their parts') file records, and the jobs or their references."""
        file_ids: set[str] = set()
        for job_id in job_ids:
            file_ids.update(self._jobs[job_id].file_ids())
            for part in self._parts.get(job_id, {}).values():
                file_ids.update(f for f in (part.file_id, part.storage_file_id) if f is not None)
        files = tuple(self._files.pop(f) for f in sorted(file_ids) if f in self._files)
        if delete_jobs:
            # As SQLite's and PostgreSQL's ON DELETE CASCADE: nothing is owed about a deleted job.
            gone = set(job_ids)
            deliveries = self._db.deliveries
            for delivery_id in [d.id for d in deliveries.values() if d.job_id in gone]:
                del deliveries[delivery_id]
        for job_id in job_ids:
            job = self._jobs[job_id]
            if delete_jobs:
                del self._jobs[job_id]
                self._parts.pop(job_id, None)
                self._db.summaries.pop(job_id, None)
                if job.dedup_key is not None:
                    self._dedup.pop(job.dedup_key, None)
                continue
            self._jobs[job_id] = attrs.evolve(
                job, source_file_id=None, converted_file_id=None, storage_file_id=None
            )
            parts = self._parts.get(job_id, {})
            for index, part in parts.items():
                parts[index] = attrs.evolve(part, file_id=None, storage_file_id=None)
        return Removed(jobs=tuple(job_ids), files=files)

    async def close(self) -> None:
        """Nothing to release; the jobs stay readable for tests that look afterwards."""
        with self._lock:
            self.calls.append("close")

    def _replace(self, stored: Job, job: Job) -> None:
        """Put ``job`` in place of ``stored`` (same id), keeping the dedup index right.

        The progress is the store's: kept while the job stays recognising, else cleared;
        so is the status message, always kept.
        """
        job = attrs.evolve(
            job,
            progress=stored.progress if job.state in PROGRESS_STATES else None,
            status_message_id=stored.status_message_id,
            edit_version=stored.edit_version,
            original_text=stored.original_text,
            original_words=stored.original_words,
            title=stored.title,
        )
        if job.dedup_key != stored.dedup_key:
            owner = None if job.dedup_key is None else self._dedup.get(job.dedup_key)
            if owner is not None and owner != job.id:
                raise Conflict
            if stored.dedup_key is not None:
                del self._dedup[stored.dedup_key]
            if job.dedup_key is not None:
                self._dedup[job.dedup_key] = job.id
        self._jobs[job.id] = job


def _eligible(job: Job, now: datetime, lease_cutoff: datetime) -> bool:
    """Queue rule 2: no delay in the future, and no lease taken or renewed after the cutoff."""
    if job.delay_time is not None and job.delay_time > now:
        return False
    if job.acquisition_id is None:
        return True
    return job.acquire_time is not None and job.acquire_time <= lease_cutoff


def _leased(job: Job, lease_cutoff: datetime) -> bool:
    """True while a worker holds ``job``: a lease taken or renewed after the cutoff."""
    return (
        job.acquisition_id is not None
        and job.acquire_time is not None
        and job.acquire_time > lease_cutoff
    )


def _part_eligible(part: JobPart, now: datetime, lease_cutoff: datetime) -> bool:
    """A part some worker may take: unfinished, not delayed, no live lease (ADR 52)."""
    if part.finished or (part.delay_time is not None and part.delay_time > now):
        return False
    if part.acquisition_id is None:
        return True
    return part.acquire_time is not None and part.acquire_time <= lease_cutoff
