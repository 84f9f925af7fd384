-- 0015: how far a job's recognition has come (ADR 51), written by the lease holder only,
-- and the chat message that shows it.
-- progress_seconds: seconds of the audio recognised so far; NULL: no progress noted.
-- progress_started, progress_updated: when this recognition began and when the seconds
-- were last noted, in the store's clock (INTEGER microseconds, like every time here).
-- A save clears all three when the job leaves recognize and check.

ALTER TABLE jobs ADD COLUMN progress_seconds REAL
    CHECK (progress_seconds IS NULL OR progress_seconds >= 0);
ALTER TABLE jobs ADD COLUMN progress_started INTEGER;
ALTER TABLE jobs ADD COLUMN progress_updated INTEGER;

-- The chat message that shows the job's status, edited as the job moves (SPEC §21);
-- written by the notice loop that sent it. NULL: none sent yet.
ALTER TABLE jobs ADD COLUMN status_message_id INTEGER;

-- A notice may now be a 'progress' edit of that message. SQLite cannot change a
-- CHECK in place: the table is made again with the same columns and indexes.
CREATE TABLE deliveries_0015 (
    id              INTEGER PRIMARY KEY,
    job_id          TEXT NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
    kind            TEXT NOT NULL CHECK (kind IN ('webhook', 'notice')),
    event           TEXT NOT NULL
        CHECK (event IN ('accepted', 'progress', 'done', 'failed', 'dead')),
    attempts        INTEGER NOT NULL DEFAULT 0,
    acquisition_id  TEXT,
    acquire_time    INTEGER,
    due             INTEGER NOT NULL,
    created         INTEGER NOT NULL,
    last_error      TEXT
) STRICT;
INSERT INTO deliveries_0015
    (id, job_id, kind, event, attempts, acquisition_id, acquire_time, due, created, last_error)
    SELECT id, job_id, kind, event, attempts, acquisition_id, acquire_time, due, created,
        last_error
    FROM deliveries;
DROP TABLE deliveries;
ALTER TABLE deliveries_0015 RENAME TO deliveries;
CREATE INDEX deliveries_due ON deliveries (due, id);
CREATE INDEX deliveries_job ON deliveries (job_id, kind, id);
