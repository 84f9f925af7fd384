-- 0008: the parts of a recording longer than one recognition takes (ADR 26).
-- A job recognised whole has no rows here. Times of the recording are REAL
-- seconds from its start.

CREATE TABLE job_parts (
    job_id           TEXT NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
    part_index       INTEGER NOT NULL CHECK (part_index >= 0),
    start_seconds    REAL NOT NULL CHECK (start_seconds >= 0),
    end_seconds      REAL NOT NULL,
    -- The part's cut audio and its Object Storage copy: plain ids, like the jobs' own.
    file_id          TEXT,
    storage_file_id  TEXT,
    -- Set once the part's recognition started: a retry checks it, never restarts it.
    operation_id     TEXT,
    -- Set once the part is done.
    text             TEXT,
    -- JSON array of {"text", "start", "end"} objects, seconds from the part's start.
    words            TEXT NOT NULL DEFAULT '[]',
    PRIMARY KEY (job_id, part_index),
    CHECK (end_seconds > start_seconds)
) STRICT, WITHOUT ROWID;
