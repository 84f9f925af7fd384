-- 0001: jobs and their file records (SPEC §3).
-- Every time column is INTEGER microseconds since the Unix epoch, written
-- only through transcriber_adapters.sqlite.times.to_db (ADR 3). STRICT makes
-- SQLite refuse any other type in them.

CREATE TABLE files (
    id          TEXT PRIMARY KEY,
    location    TEXT NOT NULL CHECK (location IN ('local', 's3')),
    object_key  TEXT,
    size        INTEGER NOT NULL CHECK (size >= 0),
    extension   TEXT NOT NULL,
    created     INTEGER NOT NULL
) STRICT;

-- File ids are plain columns, not foreign keys: an ended job keeps pointing at
-- its Object Storage copy after the copy's record is deleted, and a job edited
-- by hand may point at nothing (the step then fails it, SPEC §8).
CREATE TABLE jobs (
    id                 TEXT PRIMARY KEY,
    state              TEXT NOT NULL
        CHECK (state IN ('convert', 'recognize', 'check', 'done', 'failed', 'dead')),
    origin_kind        TEXT NOT NULL CHECK (origin_kind IN ('http', 'telegram')),
    origin_chat_id     INTEGER,
    origin_message_id  INTEGER,
    source_file_id     TEXT,
    converted_file_id  TEXT,
    storage_file_id    TEXT,
    operation_id       TEXT,
    duration           REAL,
    text               TEXT,
    -- JSON array of {"text", "start", "end"} objects.
    words              TEXT NOT NULL DEFAULT '[]',
    error              TEXT,
    attempts           INTEGER NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    acquisition_id     TEXT,
    acquire_time       INTEGER,
    delay_time         INTEGER,
    dedup_key          TEXT UNIQUE,
    created            INTEGER NOT NULL,
    updated            INTEGER NOT NULL
) STRICT;

-- acquire and ready_states walk one state in queue order; list_jobs with a
-- state filter walks it backwards.
CREATE INDEX jobs_state_created ON jobs (state, created, id);

-- list_jobs without a filter, newest first (read backwards).
CREATE INDEX jobs_created ON jobs (created, id);
