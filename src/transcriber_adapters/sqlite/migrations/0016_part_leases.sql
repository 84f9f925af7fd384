-- 0016: each part of a split recording is a unit of work of its own (SPEC §22,
-- ADR 52): any worker takes it under its own lease, fenced by its acquisition
-- id, with its own attempts and retry pause, while its job waits in check.
-- Times are INTEGER microseconds, as the jobs' own. failed = 1: the part gave
-- up for good (error says why) and its job fails with it.

ALTER TABLE job_parts ADD COLUMN attempts INTEGER NOT NULL DEFAULT 0 CHECK (attempts >= 0);
ALTER TABLE job_parts ADD COLUMN acquisition_id TEXT;
ALTER TABLE job_parts ADD COLUMN acquire_time INTEGER;
ALTER TABLE job_parts ADD COLUMN delay_time INTEGER;
ALTER TABLE job_parts ADD COLUMN error TEXT;
ALTER TABLE job_parts ADD COLUMN failed INTEGER NOT NULL DEFAULT 0 CHECK (failed IN (0, 1));

-- The part taker looks only at unfinished parts; finished ones are most rows.
CREATE INDEX job_parts_open ON job_parts (job_id, part_index) WHERE text IS NULL AND failed = 0;
