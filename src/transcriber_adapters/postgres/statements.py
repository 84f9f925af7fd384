"""The SQL of the PostgreSQL job repository, and the mapping between rows and records (ADR 39).

The same statements as SQLite's (``sqlite/statements.py``) in PostgreSQL's
dialect, as plain module constants with named parameters (``%(name)s``), so
a benchmark can run exactly these on a bare connection and a new repository
method adds its constant here. Every "now" is ``NOW_SQL`` (the database's
clock unless a test binds one); a lease is bound as an interval. The
mapping is ``rows.RowMapping`` (shared with SQLite) with native times.

A statement that can make work ready in a step state is wrapped by
``readying``: each row it returns says whether it left the job ready, so the
repository wakes that step (``WakeupSender``) once the write has committed,
and never for a change that rolled back or was fenced off.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, LiteralString

from transcriber_adapters.postgres.clock import NOW_SQL
from transcriber_adapters.sql.rows import (
    FILE_COLUMNS,
    JOB_COLUMNS,
    JOB_INSERT_COLUMNS,
    JOB_READ_COLUMNS,
    PART_COLUMNS,
    PROGRESS_COLUMNS,
    SUMMARY_COLUMNS,
    SUMMARY_PARTS,
    RowMapping,
    words_from_items,
)
from transcriber_adapters.sql.search import SEARCH_COLUMNS
from transcriber_core.entities import PROGRESS_STATES, STEP_STATES, FileRecord, Job, State
from transcriber_core.policy import QUEUE_POSITION_LIMIT
from transcriber_core.search import SearchQuery

_JOB_LIST = ", ".join(JOB_READ_COLUMNS)
_JOB_INSERT_LIST = ", ".join(JOB_INSERT_COLUMNS)


def _value(column: LiteralString) -> LiteralString:
    """The placeholder of a ``jobs`` column; ``words`` is sent as JSON text."""
    return "%(words)s::jsonb" if column == "words" else f"%({column})s"


_PROGRESS_KEPT = (
    "CASE WHEN %(state)s::text IN ("
    + ", ".join(f"'{state.value}'" for state in sorted(PROGRESS_STATES))
    + ") THEN {column} END"
)
#: A save writes every column of the job and keeps its progress only while the job stays
#: in a recognising state (ADR 51); the right-hand ``{column}`` is the row's value before.
_JOB_ASSIGN = ", ".join(
    [f"{c} = {_value(c)}" for c in JOB_COLUMNS if c != "id"]
    + [f"{c} = " + _PROGRESS_KEPT.format(column=c) for c in PROGRESS_COLUMNS]
)
_STEP_LIST = ", ".join(f"'{state.value}'" for state in STEP_STATES)

#: Eligibility of a job row (reference: queue rule 2); binds ``now`` and ``lease``.
_ELIGIBLE = (
    f"(delay_time IS NULL OR delay_time <= {NOW_SQL})"
    f" AND (acquisition_id IS NULL OR acquire_time <= {NOW_SQL} - %(lease)s::interval)"
)

#: A row some worker may take right now without waiting for a lease to run out: in a
#: step state, not leased, not delayed. Binds ``now``.
_READY_NOW = (
    f"state IN ({_STEP_LIST}) AND acquisition_id IS NULL"
    f" AND (delay_time IS NULL OR delay_time <= {NOW_SQL})"
)


def readying(write: LiteralString) -> LiteralString:
    """``write`` (an INSERT or UPDATE of ``jobs``) that also says whether each row is ready.

    The result has one row per row written, its state and ``ready`` (work a
    worker may take now), so its row count is the write's. The caller wakes
    the step of a ready row once the write has committed (``WakeupSender``).
    Binds ``now``.
    """
    return (
        f"WITH written AS ({write} RETURNING state, acquisition_id, delay_time)"
        f" SELECT state, {_READY_NOW} FROM written"
    )


def _acquire(extra: LiteralString) -> LiteralString:
    # Under READ COMMITTED, FOR UPDATE re-reads a row another transaction changed
    # since the statement's snapshot and re-tests the subselect's WHERE on that
    # newest version (EvalPlanQual); a row that no longer qualifies is passed over
    # for the next one, and a row locked by another acquire is skipped outright.
    # The row chosen is locked by this transaction until it commits, so nobody can
    # change it between the choice and the outer UPDATE: testing eligibility again
    # in the outer WHERE would add nothing. The scalar subselect runs once.
    return (
        "UPDATE jobs"
        f" SET acquisition_id = %(acquisition_id)s, acquire_time = {NOW_SQL},"
        f" attempts = attempts + 1, updated = {NOW_SQL}"
        " WHERE id = ("
        f"SELECT id FROM jobs WHERE state = %(state)s{extra} AND {_ELIGIBLE}"
        " ORDER BY created, id LIMIT 1 FOR UPDATE SKIP LOCKED"
        f") RETURNING {_JOB_LIST}"
    )


#: Lease the oldest eligible job of ``state`` in one statement (reference: queue rule 1),
#: walking ``jobs_state_created``. Parameters: ``state``, ``acquisition_id``, ``now``, ``lease``.
ACQUIRE_SQL = _acquire("")

#: ``ACQUIRE_SQL`` for the express lane, walking the partial index
#: ``jobs_state_short_created`` (``WHERE short``); the same reasoning holds.
ACQUIRE_SHORT_SQL = _acquire(" AND short")

#: Jobs waiting ahead of one job in its state and lane; parameters: ``id``, ``now``,
#: ``lease``. No row when the job does not exist; NULL when it is not waiting.
_QUEUE_POSITION_OF_ME: LiteralString = (
    f"CASE WHEN me.state NOT IN ({_STEP_LIST})"
    " OR (me.acquisition_id IS NOT NULL"
    f" AND me.acquire_time > {NOW_SQL} - %(lease)s::interval) THEN NULL"
    " ELSE (SELECT count(*) FROM (SELECT 1 FROM jobs AS other"
    " WHERE other.state = me.state AND (NOT me.short OR other.short)"
    " AND (other.created, other.id) < (me.created, me.id)"
    " AND (other.acquisition_id IS NULL"
    f" OR other.acquire_time <= {NOW_SQL} - %(lease)s::interval)"
    f" LIMIT {QUEUE_POSITION_LIMIT}) AS ahead)"
    " END"
)
QUEUE_POSITION_SQL = f"SELECT {_QUEUE_POSITION_OF_ME} FROM jobs AS me WHERE me.id = %(id)s"

#: Write every field of a job still leased by ``held_by``, saying whether the save left it
#: ready; parameters: ``job_params``, ``held_by``, ``now``. With a delay the
#: ``delay_time`` parameter is ``NOW_SQL`` plus ``delay``: bind ``delay`` (an interval).
SAVE_IF_HELD_SQL = readying(
    f"UPDATE jobs SET {_JOB_ASSIGN} WHERE id = %(id)s AND acquisition_id = %(held_by)s"
)

#: ``SAVE_IF_HELD_SQL`` with ``delay_time`` set to the database's now plus ``delay``.
SAVE_IF_HELD_DELAYED_SQL = readying(
    "UPDATE jobs SET "
    + _JOB_ASSIGN.replace("%(delay_time)s", f"{NOW_SQL} + %(delay)s::interval")
    + " WHERE id = %(id)s AND acquisition_id = %(held_by)s"
)

#: Write every field of a job whoever holds it, saying whether it is ready; run only
#: after locking and comparing the stored job in the same transaction. Parameters:
#: ``job_params``, ``now``.
SAVE_SQL = readying(f"UPDATE jobs SET {_JOB_ASSIGN} WHERE id = %(id)s")

#: Note a job's progress if ``held_by`` leases it; parameters: ``id``, ``held_by``,
#: ``seconds``, ``total`` (a fetch's bytes, ADR 85), ``begun`` (an interval when the
#: recognition starts over, else NULL), ``now``. Nothing else of the job changes, so
#: nothing becomes ready: no wake-up (ADR 51).
SAVE_PROGRESS_SQL = (
    "UPDATE jobs SET progress_seconds = %(seconds)s, progress_total = %(total)s,"
    f" progress_updated = {NOW_SQL},"
    f" progress_started = coalesce({NOW_SQL} - %(begun)s::interval, progress_started, {NOW_SQL})"
    " WHERE id = %(id)s AND acquisition_id = %(held_by)s"
)

#: Move a held lease; parameters: ``id``, ``acquisition_id``, ``now``.
RENEW_SQL = (
    f"UPDATE jobs SET acquire_time = {NOW_SQL}"
    " WHERE id = %(id)s AND acquisition_id = %(acquisition_id)s"
)

_FILE_LIST = ", ".join(FILE_COLUMNS)
_FILE_TYPES: dict[LiteralString, LiteralString] = {
    "size": "bigint",
    "created": "timestamptz",
}
_FILE_UPSERT = " ON CONFLICT (id) DO UPDATE SET " + ", ".join(
    f"{c} = excluded.{c}" for c in FILE_COLUMNS if c != "id"
)

#: Insert a new job stamped ``created = updated = now`` and its file records, unless its
#: dedup key is used (no row then, and no file written); its last column says it is ready.
#: One statement, so one round trip and no BEGIN/COMMIT: the files come as one array per
#: column (``create_params``), and are written only when the job was.
INSERT_JOB_SQL = (
    f"WITH written AS (INSERT INTO jobs ({_JOB_INSERT_LIST}) VALUES ("
    + ", ".join(NOW_SQL if c in ("created", "updated") else _value(c) for c in JOB_INSERT_COLUMNS)
    + f") ON CONFLICT (dedup_key) DO NOTHING RETURNING {_JOB_LIST}),"
    f" filed AS (INSERT INTO files ({_FILE_LIST}) SELECT * FROM unnest("
    + ", ".join(f"%(file_{c})s::{_FILE_TYPES.get(c, 'text')}[]" for c in FILE_COLUMNS)
    + f") WHERE EXISTS (SELECT FROM written){_FILE_UPSERT})"
    f" SELECT {_JOB_LIST}, {_READY_NOW} FROM written"
)

#: One job by id; parameter: ``id``.
GET_JOB_SQL = f"SELECT {_JOB_LIST} FROM jobs WHERE id = %(id)s"

#: A person's correction of a done job's transcript, compare-and-set on ``edit_version`` in
#: the one statement (ADR 57); parameters: ``RowMapping.correction_params`` and ``now``.
#: No row returned: the version moved on, the job is not done, or it is gone. A racing
#: writer waits on the row lock, then re-checks the WHERE on the row as committed.
SAVE_CORRECTION_SQL = (
    "UPDATE jobs SET text = %(text)s, words = %(words)s::jsonb,"
    " original_text = %(original_text)s, original_words = %(original_words)s::jsonb,"
    f" edit_version = edit_version + 1, updated = {NOW_SQL}"
    " WHERE id = %(id)s AND edit_version = %(version)s"
    f" AND state = '{State.DONE.value}'"
    f" RETURNING {_JOB_LIST}"
)
#: A job's title, whatever its state or lease (ADR 79); parameters: ``id``, ``title``, ``now``.
#: No row returned: the job is gone.
SAVE_TITLE_SQL = (
    f"UPDATE jobs SET title = %(title)s, updated = {NOW_SQL} WHERE id = %(id)s"
    f" RETURNING {_JOB_LIST}"
)
#: Whether a job exists; parameter ``id``.
JOB_EXISTS_SQL = "SELECT 1 FROM jobs WHERE id = %(id)s"

#: One job by id and owner; parameters: ``id``, ``owner``. Another owner's row is
#: refused on the primary key's heap tuple; its long columns (TOAST) are never read.
GET_OWNED_JOB_SQL = f"{GET_JOB_SQL} AND owner = %(owner)s"

#: One job by id that is not a person's, for an open API's caller (ADR 68); parameters: ``id``,
#: ``prefix`` (``PERSON_OWNER_PREFIX``). Refused on the heap tuple, as ``GET_OWNED_JOB_SQL``.
GET_ANONYMOUS_JOB_SQL = f"{GET_JOB_SQL} AND (owner IS NULL OR NOT starts_with(owner, %(prefix)s))"

#: One job by id, locked until the transaction ends (an owner's compare-and-set).
LOCK_JOB_SQL = f"{GET_JOB_SQL} FOR UPDATE"

#: The job that first used a dedup key; parameter: ``dedup_key``.
GET_JOB_BY_DEDUP_SQL = f"SELECT {_JOB_LIST} FROM jobs WHERE dedup_key = %(dedup_key)s"

#: The step states with an eligible job, in one query; parameters: ``now``, ``lease``.
#: Each EXISTS stops at the first eligible job of its state in ``jobs_state_created``.
READY_STATES_SQL = (
    "SELECT steps.state FROM (VALUES "
    + ", ".join(f"('{state.value}')" for state in STEP_STATES)
    + ") AS steps(state) WHERE EXISTS ("
    f"SELECT 1 FROM jobs WHERE jobs.state = steps.state AND {_ELIGIBLE})"
)

#: Jobs newest first; parameters: ``limit``, ``offset``.
LIST_JOBS_SQL = (
    f"SELECT {_JOB_LIST} FROM jobs ORDER BY created DESC, id DESC LIMIT %(limit)s OFFSET %(offset)s"
)

#: Jobs of one state newest first; parameters: ``state``, ``limit``, ``offset``.
LIST_JOBS_IN_STATE_SQL = (
    f"SELECT {_JOB_LIST} FROM jobs WHERE state = %(state)s"
    " ORDER BY created DESC, id DESC LIMIT %(limit)s OFFSET %(offset)s"
)

#: One owner's jobs newest first; parameters: ``owner``, ``limit``, ``offset``.
LIST_OWNED_JOBS_SQL = (
    f"SELECT {_JOB_LIST} FROM jobs WHERE owner = %(owner)s"
    " ORDER BY created DESC, id DESC LIMIT %(limit)s OFFSET %(offset)s"
)

#: The live view of an owner's page of jobs in one statement (``summary_from_row``):
#: each row's queue position and parts counted beside it; parameters: ``owner``,
#: ``lease``, ``now``, ``limit``, ``offset``.
LIST_OWNED_SUMMARIES_SQL = (
    f"SELECT {', '.join(SUMMARY_COLUMNS)}, {_QUEUE_POSITION_OF_ME}, {SUMMARY_PARTS}"
    " FROM jobs AS me WHERE me.owner = %(owner)s"
    " ORDER BY me.created DESC, me.id DESC LIMIT %(limit)s OFFSET %(offset)s"
)

#: One owner's done jobs whose ``search`` vector matches, newest first (ADR 58);
#: parameters: ``tsquery`` (``tsquery_of``), ``owner``, ``limit``; rows: ``SEARCH_COLUMNS`` and
#: the number of words. The inner select chooses the page by id alone: the GIN index
#: ``jobs_search`` (or, for a word in most of the owner's jobs, ``jobs_created`` read
#: backwards) finds the rows, and nothing of their TOASTed text and words is read while
#: thousands of them are sorted; only the page's rows are counted and returned.
SEARCH_SQL = (
    f"SELECT {', '.join(f'j.{column}' for column in SEARCH_COLUMNS)},"
    " jsonb_array_length(j.words) FROM ("
    " SELECT id FROM jobs WHERE search @@ to_tsquery('simple', %(tsquery)s)"
    f" AND owner = %(owner)s AND state = '{State.DONE.value}'"
    " ORDER BY created DESC, id DESC LIMIT %(limit)s) AS page"
    " JOIN jobs AS j ON j.id = page.id"
    " ORDER BY j.created DESC, j.id DESC"
)


#: One word of each of several jobs, in one round trip: its text and start; parameters:
#: ``ids`` and ``positions`` (the word's index in each), two arrays of one length.
SEARCH_WORDS_AT_SQL = (
    "SELECT j.id, j.words -> w.position ->> 'text', (j.words -> w.position ->> 'start')::float8"
    " FROM unnest(%(ids)s::text[], %(positions)s::int[]) AS w (id, position)"
    " JOIN jobs AS j ON j.id = w.id"
)

#: Every word of a job, as stored; parameter: ``id``.
GET_WORDS_SQL = "SELECT words FROM jobs WHERE id = %(id)s"


def tsquery_of(query: SearchQuery) -> str:
    """The ``to_tsquery`` text of ``query``: each term a quoted prefix (``'term':*``), ANDed.

    The terms hold only letters and digits (``SearchQuery``); quoted besides,
    ``&``, ``|``, ``!``, ``<->`` or ``:`` typed by a person never reach the parser.
    """
    return " & ".join("'" + term.replace("'", "''") + "':*" for term in query.terms)


#: Jobs per state.
COUNT_BY_STATE_SQL = "SELECT state, count(*) FROM jobs GROUP BY state"

#: Insert a file record or replace the one with its id; parameters: ``file_params``.
PUT_FILE_SQL = (
    f"INSERT INTO files ({_FILE_LIST}) VALUES ({', '.join(f'%({c})s' for c in FILE_COLUMNS)})"
    + _FILE_UPSERT
)

#: One file record by id; parameter: ``id``.
GET_FILE_SQL = f"SELECT {_FILE_LIST} FROM files WHERE id = %(id)s"

#: Remove a file record; parameter: ``id``.
DELETE_FILE_SQL = "DELETE FROM files WHERE id = %(id)s"

_PART_LIST = ", ".join(PART_COLUMNS)

#: The parts of one job by index; parameter: ``job_id``.
GET_PARTS_SQL = f"SELECT {_PART_LIST} FROM job_parts WHERE job_id = %(job_id)s ORDER BY part_index"

#: Is the job leased by ``held_by``; parameters: ``id``, ``held_by``. The row stays locked
#: (FOR SHARE) until the parts are written: an acquire's FOR UPDATE SKIP LOCKED passes it by.
JOB_HELD_SQL = "SELECT 1 FROM jobs WHERE id = %(id)s AND acquisition_id = %(held_by)s FOR SHARE"

#: Insert a part or replace the one at its index; parameters: ``part_params``.
PUT_PART_SQL = (
    f"INSERT INTO job_parts ({_PART_LIST}) VALUES ("
    + ", ".join(_value(c) for c in PART_COLUMNS)
    + ") ON CONFLICT (job_id, part_index) DO UPDATE SET "
    + ", ".join(f"{c} = excluded.{c}" for c in PART_COLUMNS if c not in ("job_id", "part_index"))
)

#: A part that some worker may take (ADR 52), as ``p``: unfinished, not delayed, no live
#: lease, and its job (``j``) waiting in check. Binds ``now`` and ``lease``.
_PART_ELIGIBLE = (
    "j.state = 'check' AND p.text IS NULL AND NOT p.failed"
    f" AND (p.delay_time IS NULL OR p.delay_time <= {NOW_SQL})"
    f" AND (p.acquisition_id IS NULL OR p.acquire_time <= {NOW_SQL} - %(lease)s::interval)"
)

#: Lease the next part of any job in one statement; parameters: ``acquisition_id``,
#: ``now``, ``lease``. As ``ACQUIRE_SQL``: FOR UPDATE OF p re-tests a part another
#: transaction changed (EvalPlanQual) and skips one another taker holds, and the part
#: stays locked until the UPDATE commits, so no second test is needed.
ACQUIRE_PART_SQL = (
    f"UPDATE job_parts SET acquisition_id = %(acquisition_id)s, acquire_time = {NOW_SQL},"
    " attempts = attempts + 1"
    " WHERE (job_id, part_index) = ("
    "SELECT p.job_id, p.part_index FROM job_parts AS p JOIN jobs AS j ON j.id = p.job_id"
    f" WHERE {_PART_ELIGIBLE} ORDER BY j.created, j.id, p.part_index LIMIT 1"
    f" FOR UPDATE OF p SKIP LOCKED) RETURNING {_PART_LIST}"
)

#: The poller's row for a part that may be taken; appended to ``READY_STATES_SQL``.
PARTS_DUE_ROW = (
    " UNION ALL SELECT 'parts' WHERE EXISTS (SELECT 1 FROM job_parts AS p"
    f" JOIN jobs AS j ON j.id = p.job_id WHERE {_PART_ELIGIBLE})"
)

#: Move a part's held lease; parameters: ``job_id``, ``part_index``, ``acquisition_id``, ``now``.
RENEW_PART_SQL = (
    f"UPDATE job_parts SET acquire_time = {NOW_SQL} WHERE job_id = %(job_id)s"
    " AND part_index = %(part_index)s AND acquisition_id = %(acquisition_id)s"
)

#: Lock a job's row for the save of one of its parts (``job_id``): saves of one job's
#: parts take turns, so the test of the last part sees every other part's commit.
#: NO KEY UPDATE: the parts' foreign keys (KEY SHARE) and acquires are not held up.
LOCK_PARTS_JOB_SQL = "SELECT 1 FROM jobs WHERE id = %(job_id)s FOR NO KEY UPDATE"

#: Write a held part's work and lease fields; parameters: ``part_params``, ``held_by``,
#: ``now``, ``delay`` (an interval, or NULL for the part's own ``delay_time``). Its range
#: is planned once and never rewritten; ``acquire_time`` is kept with the lease.
SAVE_PART_IF_HELD_SQL = (
    "UPDATE job_parts SET file_id = %(file_id)s, storage_file_id = %(storage_file_id)s,"
    " operation_id = %(operation_id)s, text = %(text)s, words = %(words)s::jsonb,"
    " attempts = %(attempts)s, error = %(error)s, failed = %(failed)s,"
    f" delay_time = coalesce({NOW_SQL} + %(delay)s::interval, %(delay_time)s::timestamptz),"
    " acquisition_id = %(acquisition_id)s::text,"
    " acquire_time = CASE WHEN %(acquisition_id)s::text IS NULL THEN NULL ELSE acquire_time END"
    " WHERE job_id = %(job_id)s AND part_index = %(part_index)s"
    " AND acquisition_id = %(held_by)s"
)

#: Make a job that waits in check due now once its parts are all finished, or one
#: failed for good; parameters: ``job_id``, ``failed``. Run after ``LOCK_PARTS_JOB_SQL``
#: in the part's transaction, so the NOT EXISTS sees every other part's committed save.
PARTS_FINISHED_SQL = (
    "UPDATE jobs SET delay_time = NULL WHERE id = %(job_id)s AND state = 'check'"
    " AND (%(failed)s::boolean OR NOT EXISTS (SELECT 1 FROM job_parts"
    " WHERE job_id = %(job_id)s AND text IS NULL))"
)

#: Take a sweep lease unless it is held; parameters: ``name``, ``now``, ``lease``. One
#: statement: a taker that finds the row waits for its holder's commit and re-tests the
#: WHERE, so of processes asking at once one writes a row (row count 1), the rest none.
TAKE_SWEEP_SQL = (
    f"INSERT INTO sweeps (name, expires) VALUES (%(name)s, {NOW_SQL} + %(lease)s::interval)"
    f" ON CONFLICT (name) DO UPDATE SET expires = excluded.expires"
    f" WHERE sweeps.expires <= {NOW_SQL}"
)

#: A job row refers to a file; the file sweep's partial index has this condition.
_HAS_FILES = (
    "(source_file_id IS NOT NULL OR converted_file_id IS NOT NULL OR storage_file_id IS NOT NULL)"
)
_JOB_FILES = "id, source_file_id, converted_file_id, storage_file_id"

#: Lock and read up to ``limit`` jobs ended ``age`` before now, oldest first, that still
#: refer to a file; parameters: ``now``, ``age``, ``limit``. SKIP LOCKED: a second sweeper
#: takes other jobs, never these (nor a job an owner is editing).
ENDED_WITH_FILES_SQL = (
    f"SELECT {_JOB_FILES} FROM jobs"
    f" WHERE ended IS NOT NULL AND ended <= {NOW_SQL} - %(age)s::interval AND {_HAS_FILES}"
    " ORDER BY ended, id LIMIT %(limit)s FOR UPDATE SKIP LOCKED"
)

#: ``ENDED_WITH_FILES_SQL`` for every ended job, files or not (the job sweep).
ENDED_JOBS_SQL = (
    f"SELECT {_JOB_FILES} FROM jobs"
    f" WHERE ended IS NOT NULL AND ended <= {NOW_SQL} - %(age)s::interval"
    " ORDER BY ended, id LIMIT %(limit)s FOR UPDATE SKIP LOCKED"
)

#: Lock and read one job's file references; parameter: ``id``. A worker's fenced save
#: waits for the delete, then finds no row.
LOCK_JOB_FILES_SQL = f"SELECT {_JOB_FILES} FROM jobs WHERE id = %(id)s FOR UPDATE"

#: The file ids of the parts of the jobs in ``ids`` (a text array).
PARTS_FILES_SQL = "SELECT file_id, storage_file_id FROM job_parts WHERE job_id = ANY(%(ids)s)"

#: Delete the file records in ``ids``, returning them: a record deleted by a concurrent
#: transaction first is not returned again.
DELETE_FILES_SQL = f"DELETE FROM files WHERE id = ANY(%(ids)s) RETURNING {_FILE_LIST}"

#: Let the jobs in ``ids`` and their parts forget their files.
FORGET_JOB_FILES_SQL = (
    "UPDATE jobs SET source_file_id = NULL, converted_file_id = NULL, storage_file_id = NULL"
    " WHERE id = ANY(%(ids)s)"
)
FORGET_PART_FILES_SQL = (
    "UPDATE job_parts SET file_id = NULL, storage_file_id = NULL WHERE job_id = ANY(%(ids)s)"
)

#: Delete the jobs in ``ids``; their parts go by ``ON DELETE CASCADE``.
DELETE_JOBS_SQL = "DELETE FROM jobs WHERE id = ANY(%(ids)s)"


#: psycopg reads and writes ``timestamptz`` as aware datetimes and ``jsonb`` as a list.
#: Every row mapping of this dialect (``sql.rows``), for its stores to call.
ROWS = RowMapping(words_from_db=words_from_items)


def create_params(job: Job, files: Sequence[FileRecord]) -> dict[str, Any]:
    """The named parameters of ``INSERT_JOB_SQL``: the job's columns, one array per file column."""
    params = ROWS.job_params(job)
    for column in FILE_COLUMNS:
        params[f"file_{column}"] = [ROWS.file_params(record)[column] for record in files]
    return params
