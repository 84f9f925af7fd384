"""``PostgresJobRepository``: the job repository on a shared PostgreSQL ``Database`` (ADR 39).

Every process on every host runs its own repository on its own pool; the
database settles the races: acquire is one ``UPDATE … FOR UPDATE SKIP
LOCKED`` statement, saves are fenced by the acquisition id in their WHERE,
and the two multi-statement writes (``save_if_unchanged``,
``save_parts_if_held``) hold the job's row lock from their test to their
write. Leases and delays are judged on the database's clock (``NOW_SQL``),
so hosts with skewed clocks agree; tests inject a ``Clock`` instead.
Whatever makes work ready in a step state says so in the same statement
(``statements.readying``); once it has committed, ``WakeupSender`` sends the
``pg_notify`` that ``PostgresWakeupFeed`` hears, coalesced per state.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import nullcontext
from datetime import timedelta
from typing import Any, LiteralString

from psycopg import AsyncConnection

from transcriber_adapters.checks import (
    check_edit,
    check_page,
    check_parts,
    check_progress,
    check_search_limit,
)
from transcriber_adapters.postgres import statements as sql
from transcriber_adapters.postgres.clock import now_param
from transcriber_adapters.postgres.connection import Database
from transcriber_adapters.postgres.outbox import (
    DELIVERY_DUE_ROW,
    PostgresOutbox,
    insert_deliveries,
)
from transcriber_adapters.postgres.wakeups import WakeupSender
from transcriber_adapters.sql.outbox import ready_of
from transcriber_adapters.sql.removal import file_ids_of, job_ids_of
from transcriber_adapters.sql.rows import delivery_params
from transcriber_adapters.sql.search import candidates
from transcriber_core.entities import (
    Correction,
    FileRecord,
    Job,
    JobPart,
    JobSummary,
    NewDelivery,
    State,
)
from transcriber_core.errors import FileNotFound, JobChanged, JobNotFound, LeaseLost
from transcriber_core.people import PERSON_OWNER_PREFIX
from transcriber_core.ports import Clock, Ready, Removed
from transcriber_core.search import Hit, SearchQuery
from transcriber_core.transitions import check_acquirable

#: The poller's one query a tick: the ready step states, then ``DUE`` when a delivery is.
_READY_SQL: LiteralString = sql.READY_STATES_SQL + DELIVERY_DUE_ROW + sql.PARTS_DUE_ROW


class PostgresJobRepository(PostgresOutbox):
    """Jobs, parts and file records in a shared ``Database``; the queue rules of docs/reference.md.

    ``save_if_held`` and ``renew`` report a job that no longer exists as
    ``LeaseLost``, as SQLite's does; ``save_if_unchanged`` tells
    ``JobNotFound`` from ``JobChanged``. ``close`` closes nothing: the
    ``Database`` belongs to whoever opened it (the composition root). The
    outbox's deliveries (``outbox.py``, ADR 35) are written in the transaction
    of the ``create`` or ``save_if_held`` that calls for them.
    """

    def __init__(self, database: Database, *, clock: Clock | None = None) -> None:
        """Use ``database``'s pool; times from ``clock`` when given, else the database's own."""
        self._db = database
        self._clock = clock
        #: Sends the wake-ups of this repository's writes, after their commits.
        self.wakeups = WakeupSender(database)

    async def create(
        self, job: Job, files: Sequence[FileRecord] = (), deliveries: Sequence[NewDelivery] = ()
    ) -> tuple[Job, bool]:
        """Store a job and its files in one statement, unless its dedup key is used.

        A job with ``deliveries`` (a Telegram job's ``accepted`` notice) is
        stored in a transaction with them instead.
        """
        now = now_param(self._clock)
        params = {**sql.create_params(job, files), "now": now}
        notices = delivery_params(job.id, deliveries, now)
        async with (
            self._db.connection() as conn,
            conn.transaction() if notices else nullcontext(),
        ):
            cursor = await conn.execute(sql.INSERT_JOB_SQL, params)
            row = await cursor.fetchone()
            if row is None:
                # The dedup key is taken. ON CONFLICT waited for the holder to commit,
                # and this next statement's snapshot sees its row.
                cursor = await conn.execute(sql.GET_JOB_BY_DEDUP_SQL, {"dedup_key": job.dedup_key})
                first = await cursor.fetchone()
                if first is None:  # pragma: no cover - the conflicting row is committed
                    raise AssertionError("a dedup conflict without the first job")
                return sql.ROWS.job_from_row(first), False
            stored = sql.ROWS.job_from_row(row)
            await insert_deliveries(conn, notices)
        if row[-1]:
            await self.wakeups.wake(stored.state)
        return stored, True

    async def get(
        self, job_id: str, *, owned_by: str | None = None, anonymous: bool = False
    ) -> Job:
        """The job with this id (and owner, or not a person's, when asked); ``JobNotFound``."""
        if owned_by is not None:
            params = {"id": job_id, "owner": owned_by}
            row = await self._db.fetchone(sql.GET_OWNED_JOB_SQL, params)
        elif anonymous:
            params = {"id": job_id, "prefix": PERSON_OWNER_PREFIX}
            row = await self._db.fetchone(sql.GET_ANONYMOUS_JOB_SQL, params)
        else:
            row = await self._db.fetchone(sql.GET_JOB_SQL, {"id": job_id})
        if row is None:
            raise JobNotFound()
        return sql.ROWS.job_from_row(row)

    async def find_by_dedup_key(self, dedup_key: str) -> Job | None:
        """The job that first used ``dedup_key``, or None."""
        row = await self._db.fetchone(sql.GET_JOB_BY_DEDUP_SQL, {"dedup_key": dedup_key})
        return None if row is None else sql.ROWS.job_from_row(row)

    async def acquire(
        self,
        state: State,
        *,
        acquisition_id: str,
        lease: timedelta,
        short_only: bool = False,
    ) -> Job | None:
        """Lease the oldest eligible job in ``state`` with one ``ACQUIRE_SQL``; None when no work.

        ``short_only`` uses ``ACQUIRE_SHORT_SQL``, the express lane. A terminal
        ``state`` is refused with ``ValueError``: no job there may get a lease.
        """
        check_acquirable(state)
        statement = sql.ACQUIRE_SHORT_SQL if short_only else sql.ACQUIRE_SQL
        params = {
            "state": state.value,
            "acquisition_id": acquisition_id,
            "lease": lease,
            "now": now_param(self._clock),
        }
        row = await self._db.fetchone(statement, params)
        return None if row is None else sql.ROWS.job_from_row(row)

    async def queue_position(self, job_id: str, *, lease: timedelta) -> int | None:
        """Jobs waiting ahead of it in its step and lane, in one query; None when not waiting."""
        params = {"id": job_id, "lease": lease, "now": now_param(self._clock)}
        row = await self._db.fetchone(sql.QUEUE_POSITION_SQL, params)
        if row is None:
            raise JobNotFound()
        position: int | None = row[0]
        return position

    async def renew(self, job_id: str, *, acquisition_id: str) -> None:
        """Move the lease's ``acquire_time`` to the store's now; ``LeaseLost`` if not held."""
        params = {"id": job_id, "acquisition_id": acquisition_id, "now": now_param(self._clock)}
        if await self._db.execute(sql.RENEW_SQL, params) == 0:
            raise LeaseLost()

    async def save_if_held(
        self,
        job: Job,
        *,
        acquisition_id: str,
        delay: timedelta | None = None,
        deliveries: Sequence[NewDelivery] = (),
    ) -> None:
        """Write every field of ``job`` if still leased by ``acquisition_id``; else ``LeaseLost``.

        With ``delay``, ``delay_time`` is the store's now plus ``delay``. A save
        that leaves the job ready wakes its step (``readying``); one with
        ``deliveries`` writes them in the same transaction.
        """
        params = {
            **sql.ROWS.job_params(job),
            "held_by": acquisition_id,
            "now": now_param(self._clock),
        }
        statement = sql.SAVE_IF_HELD_SQL
        if delay is not None:
            statement = sql.SAVE_IF_HELD_DELAYED_SQL
            params["delay"] = delay
        if not deliveries:
            rows = await self._db.fetchall(statement, params)
            if not rows:
                raise LeaseLost()
            await self._wake(rows)
            await self._ended(job)
            return
        # The move and its deliveries commit together or not at all (the transactional outbox).
        async with self._db.transaction() as conn:
            cursor = await conn.execute(statement, params)
            rows = await cursor.fetchall()
            if not rows:
                raise LeaseLost()
            await insert_deliveries(conn, delivery_params(job.id, deliveries, params["now"]))
        await self._wake(rows)
        await self._ended(job)

    async def _ended(self, job: Job) -> None:
        """After the commit: tell the /v1 answers waiting anywhere that ``job`` ended (ADR 46)."""
        if job.state.is_terminal:
            await self.wakeups.job_changed(job.id)

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
        params = {
            "id": job_id,
            "held_by": acquisition_id,
            "seconds": seconds_done,
            "total": total,
            "begun": begun,
            "now": now_param(self._clock),
        }
        if not deliveries:
            if await self._db.execute(sql.SAVE_PROGRESS_SQL, params) == 0:
                raise LeaseLost()
            return
        # The note and its notices commit together or not at all, as a move's do.
        async with self._db.transaction() as conn:
            cursor = await conn.execute(sql.SAVE_PROGRESS_SQL, params)
            if cursor.rowcount == 0:
                raise LeaseLost()
            await insert_deliveries(conn, delivery_params(job_id, deliveries, params["now"]))

    async def save_if_unchanged(self, job: Job, *, seen: Job) -> None:
        """Write ``job`` if the stored job still equals ``seen``; else raise ``JobChanged``."""
        check_edit(job, seen)
        # The row lock is held from the read to the write, so no acquire, renewal or
        # fenced save can commit in between. The whole job is compared as a record,
        # one rule for every field, as SQLite's does.
        async with self._db.transaction() as conn:
            cursor = await conn.execute(sql.LOCK_JOB_SQL, {"id": job.id})
            row = await cursor.fetchone()
            if row is None:
                raise JobNotFound()
            if sql.ROWS.job_from_row(row) != seen:
                raise JobChanged()
            params = {**sql.ROWS.job_params(job), "now": now_param(self._clock)}
            cursor = await conn.execute(sql.SAVE_SQL, params)
            rows = await cursor.fetchall()
        await self._wake(rows)

    async def save_correction(self, job_id: str, correction: Correction, *, version: int) -> Job:
        """Write ``correction`` with ``SAVE_CORRECTION_SQL`` if the done job is at ``version``.

        One statement compares and writes; ``JobChanged`` when the version
        moved on or the job is not done, ``JobNotFound`` when it is gone (ADR 57).
        """
        params = {
            **sql.ROWS.correction_params(job_id, correction, version),
            "now": now_param(self._clock),
        }
        row = await self._db.fetchone(sql.SAVE_CORRECTION_SQL, params)
        if row is not None:
            return sql.ROWS.job_from_row(row)
        if await self._db.fetchone(sql.JOB_EXISTS_SQL, {"id": job_id}) is None:
            raise JobNotFound()
        raise JobChanged()

    async def save_title(self, job_id: str, title: str | None) -> Job:
        """Write the job's title with ``SAVE_TITLE_SQL``; ``JobNotFound`` when it is gone."""
        params = {"id": job_id, "title": title, "now": now_param(self._clock)}
        row = await self._db.fetchone(sql.SAVE_TITLE_SQL, params)
        if row is None:
            raise JobNotFound()
        return sql.ROWS.job_from_row(row)

    async def ready_states(self, *, lease: timedelta) -> Ready:
        """The step states that have at least one eligible job and whether a delivery is due."""
        params = {"lease": lease, "now": now_param(self._clock)}
        return ready_of(row[0] for row in await self._db.fetchall(_READY_SQL, params))

    async def put_file(self, record: FileRecord) -> None:
        """Insert the file record, or replace the one with the same id."""
        await self._db.execute(sql.PUT_FILE_SQL, sql.ROWS.file_params(record))

    async def get_file(self, file_id: str) -> FileRecord:
        """The file record with this id; raises ``FileNotFound``."""
        row = await self._db.fetchone(sql.GET_FILE_SQL, {"id": file_id})
        if row is None:
            raise FileNotFound()
        return sql.ROWS.file_from_row(row)

    async def delete_file(self, file_id: str) -> None:
        """Remove the file record; nothing happens when it does not exist."""
        await self._db.execute(sql.DELETE_FILE_SQL, {"id": file_id})

    async def list_jobs(
        self, *, state: State | None = None, limit: int = 50, offset: int = 0
    ) -> list[Job]:
        """Jobs newest first (``created``, then ``id``, descending), optionally in one state."""
        check_page(limit, offset)
        params: dict[str, Any] = {"limit": limit, "offset": offset}
        if state is None:
            rows = await self._db.fetchall(sql.LIST_JOBS_SQL, params)
        else:
            params["state"] = state.value
            rows = await self._db.fetchall(sql.LIST_JOBS_IN_STATE_SQL, params)
        return [sql.ROWS.job_from_row(row) for row in rows]

    async def list_owned_jobs(self, owner: str, *, limit: int = 50, offset: int = 0) -> list[Job]:
        """The jobs stored with ``owner`` newest first."""
        check_page(limit, offset)
        params = {"owner": owner, "limit": limit, "offset": offset}
        rows = await self._db.fetchall(sql.LIST_OWNED_JOBS_SQL, params)
        return [sql.ROWS.job_from_row(row) for row in rows]

    async def list_owned_summaries(
        self, owner: str, *, lease: timedelta, limit: int = 50, offset: int = 0
    ) -> list[JobSummary]:
        """The live view of the owner's page of jobs with ``LIST_OWNED_SUMMARIES_SQL``."""
        check_page(limit, offset)
        params = {
            "owner": owner,
            "limit": limit,
            "offset": offset,
            "lease": lease,
            "now": now_param(self._clock),
        }
        rows = await self._db.fetchall(sql.LIST_OWNED_SUMMARIES_SQL, params)
        return [sql.ROWS.summary_from_row(row) for row in rows]

    async def search(self, owner: str, query: SearchQuery, *, limit: int = 20) -> list[Hit]:
        """The owner's done transcripts that match, newest first, found by ``tsvector`` (ADR 58)."""
        check_search_limit(limit)
        if query.empty:
            return []
        params = {"owner": owner, "tsquery": sql.tsquery_of(query), "limit": limit}
        found = candidates(query, await self._db.fetchall(sql.SEARCH_SQL, params))
        lined_up = [candidate for candidate in found if candidate.needs_one_word]
        words_at: dict[str, tuple[str | None, float | None]] = {}
        if lined_up:
            wanted = {
                "ids": [candidate.job_id for candidate in lined_up],
                "positions": [candidate.word_index for candidate in lined_up],
            }
            for job_id, text, start in await self._db.fetchall(sql.SEARCH_WORDS_AT_SQL, wanted):
                words_at[job_id] = (text, start)
        hits = []
        for candidate in found:
            hit = None
            text, start = words_at.get(candidate.job_id, (None, None))
            if text is not None and start is not None:
                hit = candidate.hit_with_word(text, start)
            if hit is None:
                row = await self._db.fetchone(sql.GET_WORDS_SQL, {"id": candidate.job_id})
                hit = None if row is None else candidate.hit_with_words(row[0])
            if hit is not None:
                hits.append(hit)
        return hits

    async def count_by_state(self) -> dict[State, int]:
        """How many jobs are in each state; states with none are left out."""
        rows = await self._db.fetchall(sql.COUNT_BY_STATE_SQL)
        return {sql.ROWS.state_of(state): count for state, count in rows}

    async def get_parts(self, job_id: str) -> list[JobPart]:
        """The parts of a split job by index; empty for a job recognised whole."""
        rows = await self._db.fetchall(sql.GET_PARTS_SQL, {"job_id": job_id})
        return [sql.ROWS.part_from_row(row) for row in rows]

    async def save_parts_if_held(
        self, job_id: str, parts: Sequence[JobPart], *, acquisition_id: str
    ) -> None:
        """Write each part in one transaction if the job is leased by ``acquisition_id``."""
        check_parts(job_id, parts)
        async with self._db.transaction() as conn:
            # FOR SHARE holds the job from the lease test to the last part: no acquire
            # can take it over in between.
            cursor = await conn.execute(sql.JOB_HELD_SQL, {"id": job_id, "held_by": acquisition_id})
            if await cursor.fetchone() is None:
                raise LeaseLost()
            if parts:
                await cursor.executemany(sql.PUT_PART_SQL, [sql.ROWS.part_params(p) for p in parts])
        if any(part.done for part in parts):
            await self.wakeups.job_changed(job_id)

    async def acquire_part(self, *, acquisition_id: str, lease: timedelta) -> JobPart | None:
        """Lease the next unfinished part of any job with ``ACQUIRE_PART_SQL``; None if none."""
        params = {"acquisition_id": acquisition_id, "lease": lease, "now": now_param(self._clock)}
        row = await self._db.fetchone(sql.ACQUIRE_PART_SQL, params)
        return None if row is None else sql.ROWS.part_from_row(row)

    async def renew_part(self, job_id: str, index: int, *, acquisition_id: str) -> None:
        """Move the part's lease to the store's now; ``LeaseLost`` if not held."""
        params = {
            "job_id": job_id,
            "part_index": index,
            "acquisition_id": acquisition_id,
            "now": now_param(self._clock),
        }
        if await self._db.execute(sql.RENEW_PART_SQL, params) == 0:
            raise LeaseLost()

    async def save_part_if_held(
        self, part: JobPart, *, acquisition_id: str, delay: timedelta | None = None
    ) -> bool:
        """Write the held part; a last finished part makes its job due in the same transaction.

        The job's row is locked first, so saves of one job's parts take turns.
        A job made due wakes the check step, and a part done tells the ``/v1``
        answers waiting on the job, once the transaction has committed.
        """
        params = {
            **sql.ROWS.part_params(part),
            "held_by": acquisition_id,
            "now": now_param(self._clock),
            "delay": delay,
        }
        due = False
        async with self._db.transaction() as conn:
            await conn.execute(sql.LOCK_PARTS_JOB_SQL, {"job_id": part.job_id})
            cursor = await conn.execute(sql.SAVE_PART_IF_HELD_SQL, params)
            if cursor.rowcount == 0:
                raise LeaseLost()
            if part.finished:
                finished = {"job_id": part.job_id, "failed": part.failed}
                cursor = await conn.execute(sql.PARTS_FINISHED_SQL, finished)
                due = cursor.rowcount > 0
        if due:
            await self.wakeups.wake(State.CHECK)
        if part.done:
            await self.wakeups.job_changed(part.job_id)
        return due

    async def delete_job(self, job_id: str) -> Removed:
        """Delete the job, its parts and their file records in one transaction; returns them."""
        async with self._db.transaction() as conn:
            cursor = await conn.execute(sql.LOCK_JOB_FILES_SQL, {"id": job_id})
            rows = await cursor.fetchall()
            if not rows:
                raise JobNotFound()
            return await _remove(conn, rows, delete_jobs=True)

    async def take_sweep(self, name: str, *, lease: timedelta) -> bool:
        """Take the sweep ``name`` for ``lease`` with ``TAKE_SWEEP_SQL``; False while held."""
        params = {"name": name, "lease": lease, "now": now_param(self._clock)}
        return await self._db.execute(sql.TAKE_SWEEP_SQL, params) == 1

    async def remove_ended_files(self, *, age: timedelta, limit: int) -> Removed:
        """Forget and delete the files of up to ``limit`` jobs ended at least ``age`` ago."""
        return await self._remove_ended(sql.ENDED_WITH_FILES_SQL, age, limit, delete_jobs=False)

    async def remove_ended_jobs(self, *, age: timedelta, limit: int) -> Removed:
        """Delete up to ``limit`` jobs ended at least ``age`` ago, with their parts and files."""
        return await self._remove_ended(sql.ENDED_JOBS_SQL, age, limit, delete_jobs=True)

    async def _remove_ended(
        self, select: LiteralString, age: timedelta, limit: int, *, delete_jobs: bool
    ) -> Removed:
        # One transaction per batch, its jobs locked FOR UPDATE SKIP LOCKED: a second
        # sweeper takes other jobs, and a file record both could name is returned by the
        # DELETE that removed it only, so each thing goes to one sweeper.
        params = {"age": age, "limit": limit, "now": now_param(self._clock)}
        async with self._db.transaction() as conn:
            cursor = await conn.execute(select, params)
            rows = await cursor.fetchall()
            if not rows:
                return Removed()
            return await _remove(conn, rows, delete_jobs=delete_jobs)

    async def close(self) -> None:
        """Wait for the wake-ups still being sent; the ``Database`` is closed by its opener."""
        await self.wakeups.flush()

    async def _wake(self, rows: list[tuple[Any, ...]]) -> None:
        """Wake the step of each committed ``readying`` row that is ready (state, ready)."""
        for state, ready in rows:
            if ready:
                await self.wakeups.wake(sql.ROWS.state_of(state))


async def _remove(
    conn: AsyncConnection[Any], rows: list[tuple[Any, ...]], *, delete_jobs: bool
) -> Removed:
    """Delete the files of the locked jobs in ``rows`` (id and three file ids), and the jobs too."""
    job_ids = job_ids_of(rows)
    cursor = await conn.execute(sql.PARTS_FILES_SQL, {"ids": job_ids})
    file_ids = file_ids_of(rows, await cursor.fetchall())
    cursor = await conn.execute(sql.DELETE_FILES_SQL, {"ids": file_ids})
    files = tuple(sql.ROWS.file_from_row(row) for row in await cursor.fetchall())
    if delete_jobs:
        await conn.execute(sql.DELETE_JOBS_SQL, {"ids": job_ids})
    else:
        await conn.execute(sql.FORGET_PART_FILES_SQL, {"ids": job_ids})
        await conn.execute(sql.FORGET_JOB_FILES_SQL, {"ids": job_ids})
    return Removed(jobs=tuple(job_ids), files=files)
