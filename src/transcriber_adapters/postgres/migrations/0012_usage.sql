-- 0012: seconds sent per payer per UTC day, one row a job, as SQLite's 0021 (SPEC §20, ADR 59).
-- The job id is the key, so a job is counted once; no foreign key to jobs, so the
-- month's total outlives a job deleted by retention.

CREATE TABLE usage_charges (
    job_id   text COLLATE "C" PRIMARY KEY,
    -- person:<id>, a static token's digest, or telegram:<user id>.
    payer    text COLLATE "C" NOT NULL,
    -- The UTC day it counts on.
    day      date NOT NULL,
    -- Declared at intake, then as the convert step measured.
    seconds  double precision NOT NULL CHECK (seconds >= 0),
    charged  timestamptz NOT NULL
);
CREATE INDEX usage_charges_payer_day ON usage_charges (payer, day);
