-- 0010: webhooks and the outbox of deliveries (ADR 35).
-- Times are INTEGER microseconds since the Unix epoch (ADR 3).

-- Where a job's end is POSTed; NULL: nobody is called.
ALTER TABLE jobs ADD COLUMN callback_url TEXT;

-- One row per message owed about a job (a webhook call, a Telegram notice),
-- written in the transaction that moved the job, deleted once sent or given up.
CREATE TABLE deliveries (
    -- Order of writing: a job's deliveries of one kind go out in this order.
    id              INTEGER PRIMARY KEY,
    job_id          TEXT NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
    kind            TEXT NOT NULL CHECK (kind IN ('webhook', 'notice')),
    event           TEXT NOT NULL CHECK (event IN ('accepted', 'done', 'failed', 'dead')),
    attempts        INTEGER NOT NULL DEFAULT 0,
    acquisition_id  TEXT,
    acquire_time    INTEGER,
    -- Not tried before this time.
    due             INTEGER NOT NULL,
    created         INTEGER NOT NULL,
    -- Why the last try failed, in our own words.
    last_error      TEXT
) STRICT;

-- The acquire walks deliveries in due order ...
CREATE INDEX deliveries_due ON deliveries (due, id);
-- ... and asks, per candidate, for earlier or running deliveries of its job.
CREATE INDEX deliveries_job ON deliveries (job_id, kind, id);
