-- 0006: how far a job's recognition has come (ADR 51), as SQLite's 0015.
-- progress_seconds: seconds of the audio recognised so far; NULL: no progress noted.
-- progress_started, progress_updated: when this recognition began and when the seconds
-- were last noted, in the database's clock. A save clears all three when the job leaves
-- recognize and check.

ALTER TABLE jobs ADD COLUMN progress_seconds double precision
    CHECK (progress_seconds IS NULL OR progress_seconds >= 0);
ALTER TABLE jobs ADD COLUMN progress_started timestamptz;
ALTER TABLE jobs ADD COLUMN progress_updated timestamptz;

-- The chat message that shows the job's status, edited as the job moves (SPEC §21);
-- written by the notice loop that sent it. NULL: none sent yet.
ALTER TABLE jobs ADD COLUMN status_message_id bigint;

-- A notice may now be a 'progress' edit of that message.
ALTER TABLE deliveries DROP CONSTRAINT deliveries_event_check;
ALTER TABLE deliveries ADD CONSTRAINT deliveries_event_check
    CHECK (event IN ('accepted', 'progress', 'done', 'failed', 'dead'));
