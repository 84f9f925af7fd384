-- 0015: how far a job's recognition has come (ADR 51), written by the lease holder only.
-- progress_seconds: seconds of the audio recognised so far; NULL: no progress noted.
-- progress_started, progress_updated: when this recognition began and when the seconds
-- were last noted, in the store's clock (INTEGER microseconds, like every time here).
-- A save clears all three when the job leaves recognize and check.

ALTER TABLE jobs ADD COLUMN progress_seconds REAL
    CHECK (progress_seconds IS NULL OR progress_seconds >= 0);
ALTER TABLE jobs ADD COLUMN progress_started INTEGER;
ALTER TABLE jobs ADD COLUMN progress_updated INTEGER;
