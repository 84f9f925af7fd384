-- 0021: seconds sent per payer per UTC day, one row a job (SPEC §20, ADR 59).
-- The job id is the key: a second charge of the same job (a retried step, a part, a
-- replayed upload) finds its row and counts nothing. No foreign key to jobs: the
-- count outlives the job's deletion by retention, as the month's total must.

CREATE TABLE usage_charges (
    job_id   TEXT PRIMARY KEY,
    -- person:<id>, a static token's digest, or telegram:<user id>.
    payer    TEXT NOT NULL,
    -- The UTC day it counts on, YYYY-MM-DD (sorts as the day does).
    day      TEXT NOT NULL,
    -- Declared at intake, then as the convert step measured.
    seconds  REAL NOT NULL CHECK (seconds >= 0),
    -- When it was charged: INTEGER microseconds since the Unix epoch (ADR 3).
    charged  INTEGER NOT NULL
) STRICT;

-- A payer's day and month are summed by payer and day.
CREATE INDEX usage_charges_payer_day ON usage_charges (payer, day);
