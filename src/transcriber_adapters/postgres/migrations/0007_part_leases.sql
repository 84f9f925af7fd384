-- 0007: each part of a split recording is a unit of work of its own (SPEC §22,
-- ADR 52), as SQLite's 0016: any worker takes it under its own lease, fenced by
-- its acquisition id, with its own attempts and retry pause, while its job
-- waits in check. failed: the part gave up for good (error says why) and its
-- job fails with it.

ALTER TABLE job_parts ADD COLUMN attempts integer NOT NULL DEFAULT 0 CHECK (attempts >= 0);
ALTER TABLE job_parts ADD COLUMN acquisition_id text;
ALTER TABLE job_parts ADD COLUMN acquire_time timestamptz;
ALTER TABLE job_parts ADD COLUMN delay_time timestamptz;
ALTER TABLE job_parts ADD COLUMN error text;
ALTER TABLE job_parts ADD COLUMN failed boolean NOT NULL DEFAULT false;

-- The part taker looks only at unfinished parts; finished ones are most rows.
CREATE INDEX job_parts_open ON job_parts (job_id, part_index) WHERE text IS NULL AND NOT failed;
