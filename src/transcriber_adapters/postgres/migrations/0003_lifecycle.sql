-- 0003: deletion, token ownership and retention (ADR 36), as SQLite's 0011.

-- SHA-256 (64 hex digits) of the API token that sent the job, never the
-- token; NULL for Telegram and for uploads made without tokens.
ALTER TABLE jobs ADD COLUMN owner text CHECK (owner IS NULL OR length(owner) = 64);

-- When the job last reached done, failed or dead; NULL while it runs.
ALTER TABLE jobs ADD COLUMN ended timestamptz;

-- Jobs that ended before this migration count from their last update.
UPDATE jobs SET ended = updated WHERE state IN ('done', 'failed', 'dead');

-- The job sweep walks ended jobs oldest first.
CREATE INDEX jobs_ended ON jobs (ended, id) WHERE ended IS NOT NULL;

-- The file sweep walks only ended jobs that still refer to a file, so jobs
-- whose files are gone cost it nothing.
CREATE INDEX jobs_ended_with_files ON jobs (ended, id)
    WHERE ended IS NOT NULL
        AND (source_file_id IS NOT NULL OR converted_file_id IS NOT NULL
            OR storage_file_id IS NOT NULL);

-- Sweep leases: one row per sweep, held until `expires` (the database's
-- clock); taken in one statement.
CREATE TABLE sweeps (
    name     text COLLATE "C" PRIMARY KEY,
    expires  timestamptz NOT NULL
);
