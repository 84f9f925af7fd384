-- 0002: webhooks and the outbox of deliveries (ADR 35), as SQLite's 0010.

-- Where a job's end is POSTed; NULL: nobody is called.
ALTER TABLE jobs ADD COLUMN callback_url text;

-- One row per message owed about a job (a webhook call, a Telegram notice),
-- written in the transaction that moved the job, deleted once sent or given up.
CREATE TABLE deliveries (
    -- Order of writing: a job's deliveries of one kind go out in this order.
    id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    job_id          text COLLATE "C" NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
    kind            text NOT NULL CHECK (kind IN ('webhook', 'notice')),
    event           text NOT NULL CHECK (event IN ('accepted', 'done', 'failed', 'dead')),
    attempts        integer NOT NULL DEFAULT 0,
    acquisition_id  text,
    acquire_time    timestamptz,
    -- Not tried before this time.
    due             timestamptz NOT NULL,
    created         timestamptz NOT NULL,
    -- Why the last try failed, in our own words.
    last_error      text
);

-- The acquire walks deliveries in due order ...
CREATE INDEX deliveries_due ON deliveries (due, id);
-- ... and asks, per candidate, for earlier or running deliveries of its job.
CREATE INDEX deliveries_job ON deliveries (job_id, kind, id);
