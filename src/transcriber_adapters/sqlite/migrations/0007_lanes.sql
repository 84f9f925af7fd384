-- 0007: the express lane (ADR 27).
-- short = 1: the job rides the express lane (small at intake and, once
-- converted, no longer than the express limit). Jobs made before this
-- migration are long: they keep their place in the general lane.

ALTER TABLE jobs ADD COLUMN short INTEGER NOT NULL DEFAULT 0 CHECK (short IN (0, 1));

-- The express loop walks the short jobs of one state in queue order; the
-- general loops keep using jobs_state_created.
CREATE INDEX jobs_state_short_created ON jobs (state, short, created, id);
