"""``SqliteJobRepository``: the job repository on the stdlib ``sqlite3`` module.

It runs on a ``SqliteDatabase`` (``connection.py``): one connection in a
thread of its own, shared with the process's other SQLite stores. Several
processes may share one file: WAL and
``busy_timeout`` serialise the writers, and every multi-statement write runs
in ``BEGIN IMMEDIATE``.
"""

from __future__ import annotations

import functools
import json
import sqlite3
from collections.abc import Sequence
from datetime import timedelta
from typing import Any, TypeVar

import attrs

from transcriber_adapters.checks import (
    check_edit,
    check_page,
    check_parts,
    check_progress,
    check_search_limit,
)
from transcriber_adapters.sql.outbox import ready_of
from transcriber_adapters.sql.removal import file_ids_of, job_ids_of
from transcriber_adapters.sql.search import candidates
from transcriber_adapters.sqlite.outbox import DELIVERY_DUE_ROW, SqliteOutbox, write_deliveries
from transcriber_adapters.sqlite.schema import immediate, truncate_wal
from transcriber_adapters.sqlite.statements import (
    ACQUIRE_PART_SQL,
    ACQUIRE_SHORT_SQL,
    ACQUIRE_SQL,
    COUNT_BY_STATE_SQL,
    DELETE_FILE_SQL,
    DELETE_FILES_SQL,
    DELETE_JOBS_SQL,
    DELETE_PARTS_SQL,
    ENDED_JOBS_SQL,
    ENDED_WITH_FILES_SQL,
    FORGET_JOB_FILES_SQL,
    FORGET_PART_FILES_SQL,
    GET_ANONYMOUS_JOB_SQL,
    GET_FILE_SQL,
    GET_JOB_BY_DEDUP_SQL,
    GET_JOB_SQL,
    GET_OWNED_JOB_SQL,
    GET_PARTS_SQL,
    GET_WORDS_SQL,
    INSERT_JOB_SQL,
    JOB_EXISTS_SQL,
    JOB_FILES_SQL,
    JOB_HELD_SQL,
    LIST_JOBS_IN_STATE_SQL,
    LIST_JOBS_SQL,
    LIST_OWNED_JOBS_SQL,
    LIST_OWNED_SUMMARIES_SQL,
    OPTIMIZE_SEARCH_SQL,
    PARTS_DUE_ROW,
    PARTS_FILES_SQL,
    PARTS_FINISHED_SQL,
    PUT_FILE_SQL,
    PUT_PART_SQL,
    QUEUE_POSITION_SQL,
    READY_STATES_SQL,
    RENEW_PART_SQL,
    RENEW_SQL,
    ROWS,
    SAVE_CORRECTION_SQL,
    SAVE_IF_HELD_SQL,
    SAVE_PART_IF_HELD_SQL,
    SAVE_PROGRESS_SQL,
    SAVE_SQL,
    SAVE_TITLE_SQL,
    SEARCH_SQL,
    SEARCH_WORD_SQL,
    TAKE_SWEEP_SQL,
    fts5_match,
)
from transcriber_adapters.sqlite.times import from_db, to_db
from transcriber_core.entities import (
    Correction,
    FileRecord,
    Job,
    JobPart,
    JobSummary,
    NewDelivery,
    State,
)
from transcriber_core.errors import (
    FileNotFound,
    JobChanged,
    JobNotFound,
    LeaseLost,
)
from transcriber_core.people import PERSON_OWNER_PREFIX
from transcriber_core.ports import Clock, Ready, Removed
from transcriber_core.search import Hit, SearchQuery
from transcriber_core.transitions import check_acquirable

T = TypeVar("T")


class SqliteJobRepository(SqliteOutbox):
    """Jobs and file records in one SQLite file; the queue rules of docs/reference.md.

    Make one on the process's ``SqliteDatabase`` (``SqliteJobRepository(database,
    clock=...)``), or with a database of its own with ``await
    SqliteJobRepository.open(path, clock=...)``, which also brings the schema
    up to date, and ``await close()`` it when done.
    Every time it stamps or judges by comes from that clock, read in the
    connection thread just before the statement (ADR 30).

    ``save_if_held`` and ``renew`` report a job that no longer exists as
    ``LeaseLost``: the caller's lease is gone either way, and telling the two
    apart would cost a second query on the hot path. ``save_if_unchanged``
    (owner edits, off the hot path) tells ``JobNotFound`` from ``JobChanged``.

    The outbox's deliveries (``outbox.py``, ADR 35) are written in the
    transaction of the ``create`` or ``save_if_held`` that calls for them.
    """

    _what = "the job repository"

    async def create(
        self, job: Job, files: Sequence[FileRecord] = (), deliveries: Sequence[NewDelivery] = ()
    ) -> tuple[Job, bool]:
        """Store a job, its files and deliveries at once, unless its dedup key is taken."""
        return await self._call(_create, job, tuple(files), tuple(deliveries), self._clock)

    async def get(
        self, job_id: str, *, owned_by: str | None = None, anonymous: bool = False
    ) -> Job:
        """The job with this id (and owner, or not a person's, when asked); ``JobNotFound``."""
        return await self._call(_get, job_id, owned_by, anonymous)

    async def find_by_dedup_key(self, dedup_key: str) -> Job | None:
        """The job that first used ``dedup_key``, or None."""
        return await self._call(_find_by_dedup_key, dedup_key)

    async def acquire(
        self,
        state: State,
        *,
        acquisition_id: str,
        lease: timedelta,
        short_only: bool = False,
    ) -> Job | None:
        """Lease the oldest eligible job in ``state`` with ``ACQUIRE_SQL``; None when no work.

        ``short_only`` uses ``ACQUIRE_SHORT_SQL``, the express lane. A terminal
        ``state`` is refused with ``ValueError``: no job there may get a lease.
        """
        check_acquirable(state)
        sql = ACQUIRE_SHORT_SQL if short_only else ACQUIRE_SQL
        params = {"state": state.value, "acquisition_id": acquisition_id}
        return await self._call(_acquire, sql, params, self._clock, lease)

    async def queue_position(self, job_id: str, *, lease: timedelta) -> int | None:
        """Jobs waiting ahead of it in its step and lane, in one query; None when not waiting."""
        return await self._call(_queue_position, job_id, self._clock, lease)

    async def renew(self, job_id: str, *, acquisition_id: str) -> None:
        """Move the lease's ``acquire_time`` to the store's now; ``LeaseLost`` if not held."""
        await self._call(_renew, job_id, acquisition_id, self._clock)

    async def save_if_held(
        self,
        job: Job,
        *,
        acquisition_id: str,
        delay: timedelta | None = None,
        deliveries: Sequence[NewDelivery] = (),
    ) -> None:
        """Write every field of ``job`` with ``SAVE_IF_HELD_SQL``; ``LeaseLost`` if not held.

        With ``delay``, ``delay_time`` is the store's now plus ``delay``.
        ``deliveries`` are written in the same transaction.
        """
        if not deliveries:
            await self._call(_save_if_held, job, acquisition_id, self._clock, delay)
        else:
            save = functools.partial(_save_with_deliveries, deliveries=tuple(deliveries))
            await self._call(save, job, acquisition_id, self._clock, delay)

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
        """Note the job's progress with ``SAVE_PROGRESS_SQL``; ``LeaseLost`` if not held."""
        check_progress(seconds_done)
        save = functools.partial(_save_progress_if_held, total=total, deliveries=tuple(deliveries))
        await self._call(save, job_id, seconds_done, acquisition_id, begun, self._clock)

    async def save_if_unchanged(self, job: Job, *, seen: Job) -> None:
        """Write ``job`` if the stored job still equals ``seen``; else raise ``JobChanged``."""
        check_edit(job, seen)
        await self._call(_save_if_unchanged, job, seen)

    async def save_correction(self, job_id: str, correction: Correction, *, version: int) -> Job:
        """Write ``correction`` with ``SAVE_CORRECTION_SQL`` if the done job is at ``version``.

        ``JobChanged`` when the version moved on or the job is not done,
        ``JobNotFound`` when it is gone (ADR 57).
        """
        params = ROWS.correction_params(job_id, correction, version)
        return await self._call(_save_correction, params, self._clock)

    async def save_title(self, job_id: str, title: str | None) -> Job:
        """Write the job's title with ``SAVE_TITLE_SQL``; ``JobNotFound`` when it is gone."""
        return await self._call(_save_title, {"id": job_id, "title": title}, self._clock)

    async def ready_states(self, *, lease: timedelta) -> Ready:
        """The step states that have at least one eligible job and whether a delivery is due."""
        return await self._call(_ready_states, self._clock, lease)

    async def put_file(self, record: FileRecord) -> None:
        """Insert the file record, or replace the one with the same id."""
        await self._call(_put_file, record)

    async def get_file(self, file_id: str) -> FileRecord:
        """The file record with this id; raises ``FileNotFound``."""
        return await self._call(_get_file, file_id)

    async def delete_file(self, file_id: str) -> None:
        """Remove the file record; nothing happens when it does not exist."""
        await self._call(_delete_file, file_id)

    async def list_jobs(
        self, *, state: State | None = None, limit: int = 50, offset: int = 0
    ) -> list[Job]:
        """Jobs newest first (``created``, then ``id``, descending), optionally in one state."""
        check_page(limit, offset)
        return await self._call(_list_jobs, state, limit, offset)

    async def list_owned_jobs(self, owner: str, *, limit: int = 50, offset: int = 0) -> list[Job]:
        """The jobs stored with ``owner`` newest first."""
        check_page(limit, offset)
        params = {"owner": owner, "limit": limit, "offset": offset}
        return await self._call(_list_owned_jobs, params)

    async def list_owned_summaries(
        self, owner: str, *, lease: timedelta, limit: int = 50, offset: int = 0
    ) -> list[JobSummary]:
        """The live view of the owner's page of jobs with ``LIST_OWNED_SUMMARIES_SQL``."""
        check_page(limit, offset)
        params = {"owner": owner, "limit": limit, "offset": offset}
        return await self._call(_list_owned_summaries, params, self._clock, lease)

    async def search(self, owner: str, query: SearchQuery, *, limit: int = 20) -> list[Hit]:
        """The owner's done transcripts that match, newest first, found with FTS5 (ADR 58)."""
        check_search_limit(limit)
        if query.empty:
            return []
        params = {"owner": owner, "match": fts5_match(query), "limit": limit}
        return await self._call(_search, query, params)

    async def count_by_state(self) -> dict[State, int]:
        """How many jobs are in each state; states with none are left out."""
        return await self._call(_count_by_state)

    async def get_parts(self, job_id: str) -> list[JobPart]:
        """The parts of a split job by index; empty for a job recognised whole."""
        return await self._call(_get_parts, job_id)

    async def save_parts_if_held(
        self, job_id: str, parts: Sequence[JobPart], *, acquisition_id: str
    ) -> None:
        """Write each part in one transaction if the job is leased by ``acquisition_id``."""
        check_parts(job_id, parts)
        await self._call(_save_parts_if_held, job_id, tuple(parts), acquisition_id)

    async def acquire_part(self, *, acquisition_id: str, lease: timedelta) -> JobPart | None:
        """Lease the next unfinished part of any job with ``ACQUIRE_PART_SQL``; None if none."""
        return await self._call(_acquire_part, acquisition_id, self._clock, lease)

    async def renew_part(self, job_id: str, index: int, *, acquisition_id: str) -> None:
        """Move the part's lease to the store's now; ``LeaseLost`` if not held."""
        await self._call(_renew_part, job_id, index, acquisition_id, self._clock)

    async def save_part_if_held(
        self, part: JobPart, *, acquisition_id: str, delay: timedelta | None = None
    ) -> bool:
        """Write the held part; a last finished part makes its job due in the same transaction."""
        return await self._call(_save_part_if_held, part, acquisition_id, self._clock, delay)

    async def delete_job(self, job_id: str) -> Removed:
        """Delete the job, its parts and their file records in one transaction."""
        return await self._call(_delete_job, job_id)

    async def take_sweep(self, name: str, *, lease: timedelta) -> bool:
        """Take the sweep ``name`` for ``lease`` with ``TAKE_SWEEP_SQL``; False while held."""
        return await self._call(_take_sweep, name, self._clock, lease)

    async def remove_ended_files(self, *, age: timedelta, limit: int) -> Removed:
        """Forget and delete the files of up to ``limit`` jobs ended before ``age`` ago."""
        sweep = functools.partial(_remove_ended, delete_jobs=False)
        return await self._call(sweep, ENDED_WITH_FILES_SQL, self._clock, age, limit)

    async def remove_ended_jobs(self, *, age: timedelta, limit: int) -> Removed:
        """Delete up to ``limit`` jobs ended before ``age`` ago, with their parts and files."""
        sweep = functools.partial(_remove_ended, delete_jobs=True)
        return await self._call(sweep, ENDED_JOBS_SQL, self._clock, age, limit)


# The operations below run on the connection thread; each takes the connection first.


def _create(
    conn: sqlite3.Connection,
    job: Job,
    files: tuple[FileRecord, ...],
    deliveries: tuple[NewDelivery, ...],
    clock: Clock,
) -> tuple[Job, bool]:
    file_rows = [ROWS.file_params(record) for record in files]
    with immediate(conn):
        if job.dedup_key is not None:
            rows = conn.execute(GET_JOB_BY_DEDUP_SQL, {"dedup_key": job.dedup_key}).fetchall()
            if rows:
                return ROWS.job_from_row(rows[0]), False
        # Stamped under the write lock: queue order is the order of the commits.
        now = clock.now()
        job = job.as_created(now)
        conn.execute(INSERT_JOB_SQL, ROWS.job_params(job))
        conn.executemany(PUT_FILE_SQL, file_rows)
        write_deliveries(conn, job.id, deliveries, now)
    return job, True


def _find_by_dedup_key(conn: sqlite3.Connection, dedup_key: str) -> Job | None:
    row = conn.execute(GET_JOB_BY_DEDUP_SQL, {"dedup_key": dedup_key}).fetchone()
    return None if row is None else ROWS.job_from_row(row)


def _get(
    conn: sqlite3.Connection, job_id: str, owned_by: str | None = None, anonymous: bool = False
) -> Job:
    if owned_by is not None:
        rows = conn.execute(GET_OWNED_JOB_SQL, {"id": job_id, "owner": owned_by}).fetchall()
    elif anonymous:
        params = {"id": job_id, "prefix": PERSON_OWNER_PREFIX}
        rows = conn.execute(GET_ANONYMOUS_JOB_SQL, params).fetchall()
    else:
        rows = conn.execute(GET_JOB_SQL, {"id": job_id}).fetchall()
    if not rows:
        raise JobNotFound()
    return ROWS.job_from_row(rows[0])


def _acquire(
    conn: sqlite3.Connection, sql: str, params: dict[str, Any], clock: Clock, lease: timedelta
) -> Job | None:
    params = {**params, **_times(clock, lease)}
    # fetchall steps the statement to its end, which commits it: a half-read
    # RETURNING cursor would keep the write lock.
    rows = conn.execute(sql, params).fetchall()
    return ROWS.job_from_row(rows[0]) if rows else None


def _queue_position(
    conn: sqlite3.Connection, job_id: str, clock: Clock, lease: timedelta
) -> int | None:
    params = {"id": job_id, "lease_cutoff": _times(clock, lease)["lease_cutoff"]}
    rows = conn.execute(QUEUE_POSITION_SQL, params).fetchall()
    if not rows:
        raise JobNotFound()
    position: int | None = rows[0][0]
    return position


def _renew(conn: sqlite3.Connection, job_id: str, acquisition_id: str, clock: Clock) -> None:
    params = {"id": job_id, "acquisition_id": acquisition_id, "now": to_db(clock.now())}
    if conn.execute(RENEW_SQL, params).rowcount == 0:
        raise LeaseLost()


def _save_if_held(
    conn: sqlite3.Connection, job: Job, acquisition_id: str, clock: Clock, delay: timedelta | None
) -> None:
    if delay is not None:
        job = attrs.evolve(job, delay_time=clock.now() + delay)
    params = ROWS.job_params(job)
    params["held_by"] = acquisition_id
    if conn.execute(SAVE_IF_HELD_SQL, params).rowcount == 0:
        raise LeaseLost()


def _save_progress_if_held(  # noqa: PLR0917 - one private call site
    conn: sqlite3.Connection,
    job_id: str,
    seconds: float,
    acquisition_id: str,
    begun: timedelta | None,
    clock: Clock,
    *,
    total: float | None,
    deliveries: tuple[NewDelivery, ...],
) -> None:
    now = clock.now()
    params = {
        "id": job_id,
        "held_by": acquisition_id,
        "seconds": seconds,
        "total": total,
        "now": to_db(now),
        "started": None if begun is None else to_db(now - begun),
    }
    if not deliveries:
        if conn.execute(SAVE_PROGRESS_SQL, params).rowcount == 0:
            raise LeaseLost()
        return
    # The note and its notices commit together or not at all, as a move's do.
    with immediate(conn):
        if conn.execute(SAVE_PROGRESS_SQL, params).rowcount == 0:
            raise LeaseLost()
        write_deliveries(conn, job_id, deliveries, now)


def _save_with_deliveries(
    conn: sqlite3.Connection,
    job: Job,
    acquisition_id: str,
    clock: Clock,
    delay: timedelta | None,
    *,
    deliveries: tuple[NewDelivery, ...],
) -> None:
    # The move and its deliveries commit together or not at all (the transactional outbox).
    with immediate(conn):
        _save_if_held(conn, job, acquisition_id, clock, delay)
        write_deliveries(conn, job.id, deliveries, clock.now())


def _save_if_unchanged(conn: sqlite3.Connection, job: Job, seen: Job) -> None:
    # BEGIN IMMEDIATE takes the write lock before the read, so no worker can commit
    # between the comparison and the write. The whole job is compared as a record
    # rather than column by column in SQL: one rule for every field (the JSON of the
    # words included), and an edit is rare enough that a second statement costs nothing.
    with immediate(conn):
        rows = conn.execute(GET_JOB_SQL, {"id": job.id}).fetchall()
        if not rows:
            raise JobNotFound()
        if ROWS.job_from_row(rows[0]) != seen:
            raise JobChanged()
        conn.execute(SAVE_SQL, ROWS.job_params(job))


def _save_correction(conn: sqlite3.Connection, params: dict[str, Any], clock: Clock) -> Job:
    # One UPDATE compares and writes: SQLite's write lock is taken before it reads the
    # row, so of two corrections from the same version exactly one matches.
    with immediate(conn):
        rows = conn.execute(SAVE_CORRECTION_SQL, {**params, "now": to_db(clock.now())}).fetchall()
        if rows:
            return ROWS.job_from_row(rows[0])
        if conn.execute(JOB_EXISTS_SQL, {"id": params["id"]}).fetchone() is None:
            raise JobNotFound()
        raise JobChanged()


def _save_title(conn: sqlite3.Connection, params: dict[str, Any], clock: Clock) -> Job:
    with immediate(conn):
        row = conn.execute(SAVE_TITLE_SQL, {**params, "now": to_db(clock.now())}).fetchone()
    if row is None:
        raise JobNotFound()
    return ROWS.job_from_row(row)


def _ready_states(conn: sqlite3.Connection, clock: Clock, lease: timedelta) -> Ready:
    params = _times(clock, lease)
    params["cutoff"] = params["lease_cutoff"]
    query = READY_STATES_SQL + DELIVERY_DUE_ROW + PARTS_DUE_ROW
    return ready_of(row[0] for row in conn.execute(query, params))


def _times(clock: Clock, lease: timedelta) -> dict[str, int]:
    """``now`` and ``lease_cutoff`` for a statement, read from the store's clock in its thread."""
    now = clock.now()
    return {"now": to_db(now), "lease_cutoff": to_db(now - lease)}


def _put_file(conn: sqlite3.Connection, record: FileRecord) -> None:
    conn.execute(PUT_FILE_SQL, ROWS.file_params(record))


def _get_file(conn: sqlite3.Connection, file_id: str) -> FileRecord:
    rows = conn.execute(GET_FILE_SQL, {"id": file_id}).fetchall()
    if not rows:
        raise FileNotFound()
    return ROWS.file_from_row(rows[0])


def _delete_file(conn: sqlite3.Connection, file_id: str) -> None:
    conn.execute(DELETE_FILE_SQL, {"id": file_id})


def _list_jobs(conn: sqlite3.Connection, state: State | None, limit: int, offset: int) -> list[Job]:
    if state is None:
        cursor = conn.execute(LIST_JOBS_SQL, {"limit": limit, "offset": offset})
    else:
        params = {"state": state.value, "limit": limit, "offset": offset}
        cursor = conn.execute(LIST_JOBS_IN_STATE_SQL, params)
    return [ROWS.job_from_row(row) for row in cursor]


def _list_owned_jobs(conn: sqlite3.Connection, params: dict[str, object]) -> list[Job]:
    return [ROWS.job_from_row(row) for row in conn.execute(LIST_OWNED_JOBS_SQL, params)]


def _list_owned_summaries(
    conn: sqlite3.Connection, params: dict[str, object], clock: Clock, lease: timedelta
) -> list[JobSummary]:
    cutoff = _times(clock, lease)["lease_cutoff"]
    rows = conn.execute(LIST_OWNED_SUMMARIES_SQL, {**params, "lease_cutoff": cutoff})
    return [ROWS.summary_from_row(row) for row in rows]


def _search(conn: sqlite3.Connection, query: SearchQuery, params: dict[str, object]) -> list[Hit]:
    hits = []
    for candidate in candidates(query, conn.execute(SEARCH_SQL, params).fetchall(), from_db):
        hit = None
        if candidate.needs_one_word:
            at = f"$[{candidate.word_index}]"
            row = conn.execute(SEARCH_WORD_SQL, {"id": candidate.job_id, "at": at}).fetchone()
            if row is not None and row[0] is not None:
                hit = candidate.hit_with_word(row[0], row[1])
        if hit is None:
            row = conn.execute(GET_WORDS_SQL, {"id": candidate.job_id}).fetchone()
            hit = None if row is None else candidate.hit_with_words(row[0])
        if hit is not None:
            hits.append(hit)
    return hits


def _get_parts(conn: sqlite3.Connection, job_id: str) -> list[JobPart]:
    return [ROWS.part_from_row(row) for row in conn.execute(GET_PARTS_SQL, {"job_id": job_id})]


def _save_parts_if_held(
    conn: sqlite3.Connection, job_id: str, parts: tuple[JobPart, ...], acquisition_id: str
) -> None:
    # BEGIN IMMEDIATE holds the write lock from the lease test to the last
    # part, so no acquire by another worker can commit in between.
    with immediate(conn):
        if conn.execute(JOB_HELD_SQL, {"id": job_id, "held_by": acquisition_id}).fetchone() is None:
            raise LeaseLost()
        conn.executemany(PUT_PART_SQL, [ROWS.part_params(part) for part in parts])


def _acquire_part(
    conn: sqlite3.Connection, acquisition_id: str, clock: Clock, lease: timedelta
) -> JobPart | None:
    params = {"acquisition_id": acquisition_id, **_times(clock, lease)}
    # fetchall steps the statement to its end, which commits it (as ``_acquire``).
    rows = conn.execute(ACQUIRE_PART_SQL, params).fetchall()
    return ROWS.part_from_row(rows[0]) if rows else None


def _renew_part(
    conn: sqlite3.Connection, job_id: str, index: int, acquisition_id: str, clock: Clock
) -> None:
    params = {
        "job_id": job_id,
        "part_index": index,
        "acquisition_id": acquisition_id,
        "now": to_db(clock.now()),
    }
    if conn.execute(RENEW_PART_SQL, params).rowcount == 0:
        raise LeaseLost()


def _save_part_if_held(
    conn: sqlite3.Connection,
    part: JobPart,
    acquisition_id: str,
    clock: Clock,
    delay: timedelta | None,
) -> bool:
    # BEGIN IMMEDIATE: the part's write and the test of its job's other parts see one
    # state, so of two last parts saved at once the second sees the first done.
    with immediate(conn):
        if delay is not None:
            part = attrs.evolve(part, delay_time=clock.now() + delay)
        params = ROWS.part_params(part)
        params["held_by"] = acquisition_id
        if conn.execute(SAVE_PART_IF_HELD_SQL, params).rowcount == 0:
            raise LeaseLost()
        if not part.finished:
            return False
        finished = {"job_id": part.job_id, "failed": int(part.failed)}
        return bool(conn.execute(PARTS_FINISHED_SQL, finished).rowcount)


def _count_by_state(conn: sqlite3.Connection) -> dict[State, int]:
    return {ROWS.state_of(state): count for state, count in conn.execute(COUNT_BY_STATE_SQL)}


def _take_sweep(conn: sqlite3.Connection, name: str, clock: Clock, lease: timedelta) -> bool:
    now = clock.now()
    params = {"name": name, "now": to_db(now), "expires": to_db(now + lease)}
    return bool(conn.execute(TAKE_SWEEP_SQL, params).rowcount)


def _delete_job(conn: sqlite3.Connection, job_id: str) -> Removed:
    # BEGIN IMMEDIATE: the read of the job's files and the deletes see one state, and a
    # second caller waits, then finds no job.
    with immediate(conn):
        rows = conn.execute(JOB_FILES_SQL, {"id": job_id}).fetchall()
        if not rows:
            raise JobNotFound()
        removed = _remove(conn, rows, delete_jobs=True)
        # The search index's older segments still hold the deleted words until merged.
        conn.execute(OPTIMIZE_SEARCH_SQL)
    truncate_wal(conn)
    return removed


def _remove_ended(
    conn: sqlite3.Connection,
    select: str,
    clock: Clock,
    age: timedelta,
    limit: int,
    *,
    delete_jobs: bool,
) -> Removed:
    # One write transaction per batch: a second sweeper waits for it and then no longer
    # finds these jobs (deleted) or their files (forgotten), so nothing goes twice.
    with immediate(conn):
        cutoff = to_db(clock.now() - age)
        rows = conn.execute(select, {"cutoff": cutoff, "limit": limit}).fetchall()
        if not rows:
            return Removed()
        removed = _remove(conn, rows, delete_jobs=delete_jobs)
        if delete_jobs:
            conn.execute(OPTIMIZE_SEARCH_SQL)  # as in _delete_job
    truncate_wal(conn)
    return removed


def _remove(conn: sqlite3.Connection, rows: list[Any], *, delete_jobs: bool) -> Removed:
    """Delete the files of the jobs in ``rows`` (id and its three file ids), and the jobs too."""
    job_ids = job_ids_of(rows)
    ids = json.dumps(job_ids)
    file_ids = file_ids_of(rows, conn.execute(PARTS_FILES_SQL, {"ids": ids}))
    files = [
        ROWS.file_from_row(row)
        for row in conn.execute(DELETE_FILES_SQL, {"ids": json.dumps(file_ids)})
    ]
    if delete_jobs:
        conn.execute(DELETE_PARTS_SQL, {"ids": ids})
        conn.execute(DELETE_JOBS_SQL, {"ids": ids})
    else:
        conn.execute(FORGET_PART_FILES_SQL, {"ids": ids})
        conn.execute(FORGET_JOB_FILES_SQL, {"ids": ids})
    return Removed(jobs=tuple(job_ids), files=tuple(files))
