-- 0001: the whole schema, equivalent to the SQLite migrations 0001-0009 (ADR 32).
-- PostgreSQL migrations are their own numbered set: SQLite's history (a table
-- dropped, columns added one by one) is not replayed here.
--
-- Every time column is timestamptz (microseconds, like SQLite's integers);
-- times that judge the queue, leases, budgets and conditions are the
-- database's own clock. Keys and ids compare byte by byte (COLLATE "C"), as
-- in SQLite, so queue order and "ORDER BY code, scope" do not depend on the
-- server's locale.

-- One row per physical copy of a file (SPEC §3).
CREATE TABLE files (
    id          text COLLATE "C" PRIMARY KEY,
    location    text NOT NULL CHECK (location IN ('local', 's3')),
    object_key  text,
    size        bigint NOT NULL CHECK (size >= 0),
    extension   text NOT NULL,
    created     timestamptz NOT NULL
);

-- The job and its queue item at once. File ids are plain columns, not
-- foreign keys: an ended job keeps pointing at its Object Storage copy after
-- the copy's record is deleted, and a job edited by hand may point at nothing
-- (its step then fails it).
CREATE TABLE jobs (
    id                 text COLLATE "C" PRIMARY KEY,
    state              text NOT NULL
        CHECK (state IN ('convert', 'recognize', 'check', 'done', 'failed', 'dead')),
    origin_kind        text NOT NULL CHECK (origin_kind IN ('http', 'telegram')),
    origin_chat_id     bigint,
    origin_message_id  bigint,
    source_file_id     text,
    converted_file_id  text,
    storage_file_id    text,
    operation_id       text,
    duration           double precision,
    text               text,
    -- JSON array of {"text", "start", "end"} objects.
    words              jsonb NOT NULL DEFAULT '[]',
    -- The language the recognizer heard (ISO 639), when it says (ADR 28).
    language           text CHECK (language IS NULL OR length(language) BETWEEN 1 AND 16),
    error              text,
    attempts           integer NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    acquisition_id     text,
    acquire_time       timestamptz,
    delay_time         timestamptz,
    dedup_key          text UNIQUE,
    -- SHA-256 (hex) of the bytes an Idempotency-Key first came with.
    upload_digest      text CHECK (upload_digest IS NULL OR length(upload_digest) = 64),
    -- The job rides the express lane (ADR 27).
    short              boolean NOT NULL DEFAULT false,
    created            timestamptz NOT NULL,
    updated            timestamptz NOT NULL
);

-- acquire and ready_states walk one state in queue order; list_jobs with a
-- state filter walks it backwards.
CREATE INDEX jobs_state_created ON jobs (state, created, id);
-- The express loop walks the short jobs of one state in queue order.
CREATE INDEX jobs_state_short_created ON jobs (state, created, id) WHERE short;
-- list_jobs without a filter, newest first (read backwards).
CREATE INDEX jobs_created ON jobs (created, id);

-- The parts of a recording longer than one recognition takes (ADR 26). Times
-- of the recording are seconds from its start.
CREATE TABLE job_parts (
    job_id           text COLLATE "C" NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
    part_index       integer NOT NULL CHECK (part_index >= 0),
    start_seconds    double precision NOT NULL CHECK (start_seconds >= 0),
    end_seconds      double precision NOT NULL,
    file_id          text,
    storage_file_id  text,
    -- Set once the part's recognition started: a retry checks it, never restarts it.
    operation_id     text,
    -- Set once the part is done.
    text             text,
    -- JSON array of {"text", "start", "end"} objects, seconds from the part's start.
    words            jsonb NOT NULL DEFAULT '[]',
    PRIMARY KEY (job_id, part_index),
    CHECK (end_seconds > start_seconds)
);

-- The admin panel's one account: the CHECK pins the key, so a second owner
-- is a conflict that INSERT ... ON CONFLICT DO NOTHING turns into "not created".
CREATE TABLE owner (
    id             integer PRIMARY KEY CHECK (id = 1),
    -- argon2id in its encoded form; never the password.
    password_hash  text NOT NULL,
    created        timestamptz NOT NULL
);

-- One row per owner login (ADR 17). The cookie holds a random id; this table
-- holds only its SHA-256.
CREATE TABLE admin_sessions (
    id_hash    text COLLATE "C" PRIMARY KEY,
    csrf       text NOT NULL,
    created    timestamptz NOT NULL,
    last_seen  timestamptz NOT NULL,
    -- min(last_seen + idle, created + lifetime); refused from this moment on.
    expires    timestamptz NOT NULL,
    -- A one-shot message for the next page.
    flash      text
);
CREATE INDEX admin_sessions_expires ON admin_sessions (expires);

-- Wrong passwords per client address, seen by every process.
CREATE TABLE login_failures (
    client  text COLLATE "C" PRIMARY KEY,
    count   integer NOT NULL CHECK (count > 0),
    last    timestamptz NOT NULL
);
CREATE INDEX login_failures_last ON login_failures (last);

-- The service's own faults workers ran into (SPEC §17): scope is '' for the
-- whole deployment or a host name (that host's disk).
CREATE TABLE service_conditions (
    code     text COLLATE "C" NOT NULL,
    scope    text COLLATE "C" NOT NULL,
    -- Our own words, never a vendor's text.
    message  text NOT NULL,
    -- First seen since it last cleared.
    since    timestamptz NOT NULL,
    -- Last seen; a condition not seen again for a while has aged out.
    seen     timestamptz NOT NULL,
    PRIMARY KEY (code, scope)
);

-- One token bucket per request budget (ADR 29): the tokens it held at
-- `updated`, and the budget's shape so /metrics can show its level.
CREATE TABLE budgets (
    name      text COLLATE "C" PRIMARY KEY,
    capacity  integer NOT NULL CHECK (capacity >= 1),
    per       interval NOT NULL CHECK (per > interval '0'),
    tokens    double precision NOT NULL,
    updated   timestamptz NOT NULL
);
