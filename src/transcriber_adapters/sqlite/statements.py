"""The SQL of the job repository and the owner store, and the mapping between rows and records.

The statements are plain module constants with named parameters, so a
benchmark can run exactly the same statements on a bare ``sqlite3``
connection. Every time parameter is made by ``times.to_db``. The mapping
is ``rows.RowMapping`` (shared with PostgreSQL) with SQLite's times and
JSON text.
"""

from __future__ import annotations

import json

from transcriber_adapters.sql.rows import (
    FILE_COLUMNS,
    JOB_COLUMNS,
    JOB_INSERT_COLUMNS,
    JOB_READ_COLUMNS,
    NO_WORDS,
    PART_COLUMNS,
    PROGRESS_COLUMNS,
    SUMMARY_COLUMNS,
    SUMMARY_PARTS,
    RowMapping,
    words_from_items,
)
from transcriber_adapters.sql.search import SEARCH_COLUMNS
from transcriber_adapters.sqlite.times import from_db, to_db
from transcriber_core.entities import PROGRESS_STATES, STEP_STATES, State, Word
from transcriber_core.policy import QUEUE_POSITION_LIMIT
from transcriber_core.search import SearchQuery

_JOB_LIST = ", ".join(JOB_READ_COLUMNS)
_JOB_INSERT_LIST = ", ".join(JOB_INSERT_COLUMNS)
_PROGRESS_KEPT = (
    "CASE WHEN :state IN ("
    + ", ".join(f"'{state.value}'" for state in sorted(PROGRESS_STATES))
    + ") THEN {column} END"
)
#: A save writes every column of the job and keeps its progress only while the job stays
#: in a recognising state (ADR 51); the right-hand ``{column}`` is the row's value before.
_JOB_ASSIGN = ", ".join(
    [f"{column} = :{column}" for column in JOB_COLUMNS if column != "id"]
    + [f"{column} = " + _PROGRESS_KEPT.format(column=column) for column in PROGRESS_COLUMNS]
)

_FILE_LIST = ", ".join(FILE_COLUMNS)

#: Eligibility of a job row (reference: queue rule 2); binds ``:now`` and ``:lease_cutoff``.
_ELIGIBLE = (
    "(delay_time IS NULL OR delay_time <= :now)"
    " AND (acquisition_id IS NULL OR acquire_time <= :lease_cutoff)"
)

#: Lease the oldest eligible job of ``:state`` in one statement (reference: queue rule 1).
#: Parameters: ``state``, ``acquisition_id``, ``now``, ``lease_cutoff``.
#:
#: An UPDATE takes SQLite's write lock before it reads anything, so the
#: subselect always sees the latest committed queue and no other writer,
#: thread or process, can commit between the choice and the update.
#: Repeating the eligibility test in the outer WHERE would add nothing: it
#: would read the same snapshot as the subselect.
ACQUIRE_SQL = (
    "UPDATE jobs"
    " SET acquisition_id = :acquisition_id, acquire_time = :now,"
    " attempts = attempts + 1, updated = :now"
    " WHERE id = ("
    f"SELECT id FROM jobs WHERE state = :state AND {_ELIGIBLE}"
    " ORDER BY created, id LIMIT 1"
    f") RETURNING {_JOB_LIST}"
)

#: ``ACQUIRE_SQL`` for the express lane: only short jobs, walked in the
#: ``jobs_state_short_created`` index. Same parameters, same one statement,
#: so the same reasoning holds: no second check is needed.
ACQUIRE_SHORT_SQL = (
    "UPDATE jobs"
    " SET acquisition_id = :acquisition_id, acquire_time = :now,"
    " attempts = attempts + 1, updated = :now"
    " WHERE id = ("
    f"SELECT id FROM jobs WHERE state = :state AND short = 1 AND {_ELIGIBLE}"
    " ORDER BY created, id LIMIT 1"
    f") RETURNING {_JOB_LIST}"
)

#: Jobs waiting ahead of one job in its state and lane (``queue_position``); parameters:
#: ``id``, ``lease_cutoff``. No row when the job does not exist; NULL when it is not
#: waiting (terminal, or under a live lease). A short job counts short jobs only.
_QUEUE_POSITION_OF_ME = (
    "CASE WHEN me.state NOT IN ("
    + ", ".join(f"'{state.value}'" for state in STEP_STATES)
    + ") OR (me.acquisition_id IS NOT NULL AND me.acquire_time > :lease_cutoff) THEN NULL"
    " ELSE (SELECT count(*) FROM (SELECT 1 FROM jobs AS other"
    " WHERE other.state = me.state AND (me.short = 0 OR other.short = 1)"
    " AND (other.created, other.id) < (me.created, me.id)"
    " AND (other.acquisition_id IS NULL OR other.acquire_time <= :lease_cutoff)"
    f" LIMIT {QUEUE_POSITION_LIMIT}))"
    " END"
)
QUEUE_POSITION_SQL = f"SELECT {_QUEUE_POSITION_OF_ME} FROM jobs AS me WHERE me.id = :id"

#: Write every field of a job still leased by ``:held_by``; parameters: every
#: column of ``JOB_COLUMNS`` (from ``job_params``) and ``held_by``.
SAVE_IF_HELD_SQL = f"UPDATE jobs SET {_JOB_ASSIGN} WHERE id = :id AND acquisition_id = :held_by"

#: Write every field of a job whoever holds it; parameters: ``job_params``. Run only
#: after comparing the stored job with what the editor saw, in the same transaction.
SAVE_SQL = f"UPDATE jobs SET {_JOB_ASSIGN} WHERE id = :id"

#: Note a job's progress if ``:held_by`` leases it; parameters: ``id``, ``held_by``,
#: ``seconds``, ``total`` (a fetch's bytes, ADR 85), ``started`` (now less ``begun`` when
#: the recognition starts over, else NULL), ``now``. Nothing else of the job changes
#: (ADR 51).
SAVE_PROGRESS_SQL = (
    "UPDATE jobs SET progress_seconds = :seconds, progress_total = :total,"
    " progress_updated = :now,"
    " progress_started = coalesce(:started, progress_started, :now)"
    " WHERE id = :id AND acquisition_id = :held_by"
)

#: Move a held lease; parameters: ``id``, ``acquisition_id``, ``now``.
RENEW_SQL = (
    "UPDATE jobs SET acquire_time = :now WHERE id = :id AND acquisition_id = :acquisition_id"
)

#: Insert a new job; parameters: ``job_params``.
INSERT_JOB_SQL = (
    f"INSERT INTO jobs ({_JOB_INSERT_LIST})"
    f" VALUES ({', '.join(f':{c}' for c in JOB_INSERT_COLUMNS)})"
)

#: One job by id; parameter: ``id``.
GET_JOB_SQL = f"SELECT {_JOB_LIST} FROM jobs WHERE id = :id"

#: A person's correction of a done job's transcript, compare-and-set on ``edit_version`` in
#: the one statement (ADR 57); parameters: ``RowMapping.correction_params`` and ``now``.
#: No row returned: the version moved on, the job is not done, or it is gone.
SAVE_CORRECTION_SQL = (
    "UPDATE jobs SET text = :text, words = :words,"
    " original_text = :original_text, original_words = :original_words,"
    " edit_version = edit_version + 1, updated = :now"
    f" WHERE id = :id AND edit_version = :version AND state = '{State.DONE.value}'"
    f" RETURNING {_JOB_LIST}"
)
#: A job's title, whatever its state or lease (ADR 79); parameters: ``id``, ``title``, ``now``.
#: No row returned: the job is gone.
SAVE_TITLE_SQL = (
    f"UPDATE jobs SET title = :title, updated = :now WHERE id = :id RETURNING {_JOB_LIST}"
)
#: Whether a job exists; parameter ``id``.
JOB_EXISTS_SQL = "SELECT 1 FROM jobs WHERE id = :id"

#: One job by id and owner; parameters: ``id``, ``owner``. ``INDEXED BY``: the planner would
#: take the unique id index and read the row to compare its owner; seeking (owner, id)
#: refuses another owner's job without reading its row (its long transcript).
GET_OWNED_JOB_SQL = (
    f"SELECT {_JOB_LIST} FROM jobs INDEXED BY jobs_owner_id WHERE owner = :owner AND id = :id"
)

#: One job by id that is not a person's, for an open API's caller (ADR 68); parameters: ``id``,
#: ``prefix`` (``PERSON_OWNER_PREFIX``). The subquery reads only the (id, owner) index
#: (migration 0026), so a person's job is refused before its row (its long transcript) is read.
GET_ANONYMOUS_JOB_SQL = (
    f"SELECT {_JOB_LIST} FROM jobs WHERE rowid = (SELECT rowid FROM jobs INDEXED BY jobs_id_owner"
    " WHERE id = :id AND (owner IS NULL OR substr(owner, 1, length(:prefix)) <> :prefix))"
)

#: The job that first used a dedup key; parameter: ``dedup_key``.
GET_JOB_BY_DEDUP_SQL = f"SELECT {_JOB_LIST} FROM jobs WHERE dedup_key = :dedup_key"

#: The step states with an eligible job, in one query; parameters: ``now``, ``lease_cutoff``.
#: Each EXISTS stops at the first eligible job of its state in the queue index.
READY_STATES_SQL = (
    "WITH steps(state) AS (VALUES "
    + ", ".join(f"('{state.value}')" for state in STEP_STATES)
    + ") SELECT state FROM steps WHERE EXISTS ("
    f"SELECT 1 FROM jobs WHERE jobs.state = steps.state AND {_ELIGIBLE})"
)

#: Jobs newest first; parameters: ``limit``, ``offset``.
LIST_JOBS_SQL = (
    f"SELECT {_JOB_LIST} FROM jobs ORDER BY created DESC, id DESC LIMIT :limit OFFSET :offset"
)

#: Jobs of one state newest first; parameters: ``state``, ``limit``, ``offset``.
LIST_JOBS_IN_STATE_SQL = (
    f"SELECT {_JOB_LIST} FROM jobs WHERE state = :state"
    " ORDER BY created DESC, id DESC LIMIT :limit OFFSET :offset"
)

#: One owner's jobs newest first; parameters: ``owner``, ``limit``, ``offset``.
LIST_OWNED_JOBS_SQL = (
    f"SELECT {_JOB_LIST} FROM jobs WHERE owner = :owner"
    " ORDER BY created DESC, id DESC LIMIT :limit OFFSET :offset"
)

#: The live view of an owner's page of jobs in one statement (``summary_from_row``):
#: each row's queue position and parts counted beside it; parameters: ``owner``,
#: ``lease_cutoff``, ``limit``, ``offset``.
LIST_OWNED_SUMMARIES_SQL = (
    f"SELECT {', '.join(SUMMARY_COLUMNS)}, {_QUEUE_POSITION_OF_ME}, {SUMMARY_PARTS}"
    " FROM jobs AS me WHERE me.owner = :owner"
    " ORDER BY me.created DESC, me.id DESC LIMIT :limit OFFSET :offset"
)

_SEARCH_LIST = ", ".join(SEARCH_COLUMNS)

#: One owner's done jobs whose text ``jobs_search`` matches, newest first (ADR 58);
#: parameters: ``match`` (``fts5_match``), ``owner``, ``limit``; rows: ``SEARCH_COLUMNS`` and
#: the number of words (SQLite counts them in C). The inner select walks the
#: owner's entries of ``jobs_owner_created`` newest first and keeps the rowids the match
#: holds (a set built once from the index alone): no job row is read to choose, since a
#: row's owner and times sit after its long text and words. Only the page's rows are read.
#: The index holds done jobs only; the outer WHERE says so again for a row edited by hand,
#: its unary ``+`` keeping the planner on the rowids rather than another index.
SEARCH_SQL = (
    f"SELECT {_SEARCH_LIST}, json_array_length(words) FROM jobs WHERE rowid IN ("
    " SELECT rowid FROM jobs INDEXED BY jobs_owner_created WHERE owner = :owner"
    " AND rowid IN (SELECT rowid FROM jobs_search WHERE jobs_search MATCH :match)"
    " ORDER BY created DESC, id DESC LIMIT :limit)"
    f" AND +owner = :owner AND +state = '{State.DONE.value}'"
    " ORDER BY created DESC, id DESC"
)


#: Merge the search index into one segment: the words of deleted transcripts, kept by a
#: contentless table's older segments until a merge, are gone after it (secure_delete zeroes
#: their pages). About 0.2 s for 10,000 transcripts (ADR 58); run after deletions only.
OPTIMIZE_SEARCH_SQL = "INSERT INTO jobs_search (jobs_search) VALUES ('optimize')"

#: The text and start of one word of a job; parameters: ``id``, ``at`` (``$[index]``).
SEARCH_WORD_SQL = (
    "SELECT json_extract(words, :at || '.text'), json_extract(words, :at || '.start')"
    " FROM jobs WHERE id = :id"
)

#: Every word of a job, as stored; parameter: ``id``.
GET_WORDS_SQL = "SELECT words FROM jobs WHERE id = :id"


def fts5_match(query: SearchQuery) -> str:
    """The FTS5 expression of ``query``: each term a quoted prefix, all of them (AND).

    The terms hold only letters and digits (``SearchQuery``), and each is
    quoted besides, so ``NEAR``, ``AND``, ``*`` or ``-`` typed by a person
    stays a word to find.
    """
    return " ".join('"' + term.replace('"', '""') + '"*' for term in query.terms)


#: Jobs per state.
COUNT_BY_STATE_SQL = "SELECT state, count(*) FROM jobs GROUP BY state"

#: Insert a file record or replace the one with its id; parameters: ``file_params``.
PUT_FILE_SQL = (
    f"INSERT INTO files ({_FILE_LIST}) VALUES ({', '.join(f':{c}' for c in FILE_COLUMNS)})"
    " ON CONFLICT (id) DO UPDATE SET "
    + ", ".join(f"{c} = excluded.{c}" for c in FILE_COLUMNS if c != "id")
)

#: One file record by id; parameter: ``id``.
GET_FILE_SQL = f"SELECT {_FILE_LIST} FROM files WHERE id = :id"

#: Remove a file record; parameter: ``id``.
DELETE_FILE_SQL = "DELETE FROM files WHERE id = :id"

_PART_LIST = ", ".join(PART_COLUMNS)

#: The parts of one job by index; parameter: ``job_id``.
GET_PARTS_SQL = f"SELECT {_PART_LIST} FROM job_parts WHERE job_id = :job_id ORDER BY part_index"

#: Is the job leased by ``:held_by``; parameters: ``id``, ``held_by``. Read inside the
#: ``BEGIN IMMEDIATE`` that writes the parts, so no acquire can commit in between.
JOB_HELD_SQL = "SELECT 1 FROM jobs WHERE id = :id AND acquisition_id = :held_by"

#: Insert a part or replace the one at its index; parameters: ``part_params``.
PUT_PART_SQL = (
    f"INSERT INTO job_parts ({_PART_LIST}) VALUES ({', '.join(f':{c}' for c in PART_COLUMNS)})"
    " ON CONFLICT (job_id, part_index) DO UPDATE SET "
    + ", ".join(f"{c} = excluded.{c}" for c in PART_COLUMNS if c not in ("job_id", "part_index"))
)

#: A part that some worker may take (ADR 52), as ``p``: unfinished, not delayed, no live
#: lease, and its job (``j``) waiting in check. Binds ``now`` and ``lease_cutoff``.
_PART_ELIGIBLE = (
    "j.state = 'check' AND p.text IS NULL AND p.failed = 0"
    " AND (p.delay_time IS NULL OR p.delay_time <= :now)"
    " AND (p.acquisition_id IS NULL OR p.acquire_time <= :lease_cutoff)"
)

#: Lease the next part of any job in one statement; parameters: ``acquisition_id``,
#: ``now``, ``lease_cutoff``. As ``ACQUIRE_SQL``: the UPDATE holds SQLite's write lock
#: before the subselect reads, so no other taker can commit between choice and write.
ACQUIRE_PART_SQL = (
    "UPDATE job_parts SET acquisition_id = :acquisition_id, acquire_time = :now,"
    " attempts = attempts + 1"
    " WHERE (job_id, part_index) = ("
    "SELECT p.job_id, p.part_index FROM job_parts AS p JOIN jobs AS j ON j.id = p.job_id"
    f" WHERE {_PART_ELIGIBLE} ORDER BY j.created, j.id, p.part_index LIMIT 1"
    f") RETURNING {_PART_LIST}"
)

#: The poller's row for a part that may be taken; appended to ``READY_STATES_SQL``.
PARTS_DUE_ROW = (
    " UNION ALL SELECT 'parts' WHERE EXISTS (SELECT 1 FROM job_parts AS p"
    f" JOIN jobs AS j ON j.id = p.job_id WHERE {_PART_ELIGIBLE})"
)

#: Move a part's held lease; parameters: ``job_id``, ``part_index``, ``acquisition_id``, ``now``.
RENEW_PART_SQL = (
    "UPDATE job_parts SET acquire_time = :now WHERE job_id = :job_id"
    " AND part_index = :part_index AND acquisition_id = :acquisition_id"
)

#: Write a held part's work and lease fields; parameters: ``part_params``, ``held_by``.
#: Its range is planned once and never rewritten; ``acquire_time`` is the store's: kept
#: while the lease is kept, cleared with it.
SAVE_PART_IF_HELD_SQL = (
    "UPDATE job_parts SET file_id = :file_id, storage_file_id = :storage_file_id,"
    " operation_id = :operation_id, text = :text, words = :words, attempts = :attempts,"
    " error = :error, failed = :failed, delay_time = :delay_time,"
    " acquisition_id = :acquisition_id,"
    " acquire_time = CASE WHEN :acquisition_id IS NULL THEN NULL ELSE acquire_time END"
    " WHERE job_id = :job_id AND part_index = :part_index AND acquisition_id = :held_by"
)

#: Make a job that waits in check due now once its parts are all finished, or one
#: failed for good (``failed`` 1); parameters: ``job_id``, ``failed``. Run in the
#: transaction of the part's save, under the write lock: the count sees every commit.
PARTS_FINISHED_SQL = (
    "UPDATE jobs SET delay_time = NULL WHERE id = :job_id AND state = 'check'"
    " AND (:failed = 1 OR NOT EXISTS (SELECT 1 FROM job_parts"
    " WHERE job_id = :job_id AND text IS NULL))"
)

#: Take a sweep lease unless it is held; parameters: ``name``, ``now``, ``expires``. One
#: statement: the upsert's WHERE reads the row under the write lock, so of processes asking
#: at once one changes a row (rowcount 1) and the rest change none.
TAKE_SWEEP_SQL = (
    "INSERT INTO sweeps (name, expires) VALUES (:name, :expires)"
    " ON CONFLICT (name) DO UPDATE SET expires = excluded.expires WHERE sweeps.expires <= :now"
)

#: A job's files are referred to by the job row; the file sweep's index has this condition.
_HAS_FILES = (
    "(source_file_id IS NOT NULL OR converted_file_id IS NOT NULL OR storage_file_id IS NOT NULL)"
)

#: Ended jobs oldest first that still refer to a file; parameters: ``cutoff``, ``limit``.
ENDED_WITH_FILES_SQL = (
    "SELECT id, source_file_id, converted_file_id, storage_file_id FROM jobs"
    f" WHERE ended <= :cutoff AND {_HAS_FILES} ORDER BY ended LIMIT :limit"
)

#: Ended jobs oldest first; parameters: ``cutoff``, ``limit``.
ENDED_JOBS_SQL = (
    "SELECT id, source_file_id, converted_file_id, storage_file_id FROM jobs"
    " WHERE ended <= :cutoff ORDER BY ended LIMIT :limit"
)

#: One job's file references; parameter: ``id``.
JOB_FILES_SQL = (
    "SELECT id, source_file_id, converted_file_id, storage_file_id FROM jobs WHERE id = :id"
)

#: The file ids of the parts of the jobs in the JSON array ``:ids``.
PARTS_FILES_SQL = (
    "SELECT file_id, storage_file_id FROM job_parts"
    " WHERE job_id IN (SELECT value FROM json_each(:ids))"
)

#: Delete the file records in the JSON array ``:ids``, returning them.
DELETE_FILES_SQL = (
    f"DELETE FROM files WHERE id IN (SELECT value FROM json_each(:ids)) RETURNING {_FILE_LIST}"
)

#: Let the jobs in ``:ids`` (JSON) and their parts forget their files.
FORGET_JOB_FILES_SQL = (
    "UPDATE jobs SET source_file_id = NULL, converted_file_id = NULL, storage_file_id = NULL"
    " WHERE id IN (SELECT value FROM json_each(:ids))"
)
FORGET_PART_FILES_SQL = (
    "UPDATE job_parts SET file_id = NULL, storage_file_id = NULL"
    " WHERE job_id IN (SELECT value FROM json_each(:ids))"
)

#: Delete the jobs in ``:ids`` (JSON) and their parts.
DELETE_PARTS_SQL = "DELETE FROM job_parts WHERE job_id IN (SELECT value FROM json_each(:ids))"
DELETE_JOBS_SQL = "DELETE FROM jobs WHERE id IN (SELECT value FROM json_each(:ids))"

#: One client's failures; parameter: ``client``.
GET_LOGIN_FAILURES_SQL = "SELECT client, count, last FROM login_failures WHERE client = :client"

#: The first failure of a client; parameters: ``client``, ``count``, ``last``. A row already
#: there means another attempt got in first: no row changes.
INSERT_LOGIN_FAILURES_SQL = (
    "INSERT INTO login_failures (client, count, last) VALUES (:client, :count, :last)"
    " ON CONFLICT (client) DO NOTHING"
)

#: A further failure, compare-and-set on what the caller read; parameters: ``client``,
#: ``count``, ``last``, ``seen_count``, ``seen_last``. One statement: of parallel
#: attempts that read the same row, exactly one changes it.
UPDATE_LOGIN_FAILURES_SQL = (
    "UPDATE login_failures SET count = :count, last = :last"
    " WHERE client = :client AND count = :seen_count AND last = :seen_last"
)

#: Forget one client's failures; parameter: ``client``.
CLEAR_LOGIN_FAILURES_SQL = "DELETE FROM login_failures WHERE client = :client"

#: Forget failures last counted before ``before``; parameter: ``before``.
FORGET_LOGIN_FAILURES_SQL = "DELETE FROM login_failures WHERE last < :before"


def _words_from_text(value: str) -> tuple[Word, ...]:
    if value == NO_WORDS:
        return ()
    return words_from_items(json.loads(value))


#: Every row mapping of this dialect (``sql.rows``), for its stores to call.
ROWS = RowMapping(time_to_db=to_db, time_from_db=from_db, words_from_db=_words_from_text)
