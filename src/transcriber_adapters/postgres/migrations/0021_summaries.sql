-- 0021: each recording's summary as a unit of work (SPEC §27, ADR 83), as SQLite's 0030.
-- One row per job, gone with it; its text is the transcript's substance, never logged.

CREATE TABLE summaries (
    job_id          text COLLATE "C" PRIMARY KEY REFERENCES jobs (id) ON DELETE CASCADE,
    state           text NOT NULL CHECK (state IN ('pending', 'done', 'failed')),
    text            text,
    -- JSON arrays: ["point", ...] and [{"text", "who"}, ...].
    points          text NOT NULL DEFAULT '[]',
    actions         text NOT NULL DEFAULT '[]',
    model           text,
    prompt_version  integer NOT NULL,
    -- The digest of the transcript it was built from: another one now means stale.
    source          text,
    error           text,
    attempts        integer NOT NULL DEFAULT 0,
    acquisition_id  text,
    acquire_time    timestamptz,
    delay_time      timestamptz,
    requested       timestamptz NOT NULL,
    created         timestamptz
);

CREATE INDEX summaries_pending ON summaries (requested, job_id) WHERE state = 'pending';
