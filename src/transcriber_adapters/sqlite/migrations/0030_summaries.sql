-- 0030: each recording's summary as a unit of work (SPEC §27, ADR 83), leased like a part.
-- One row per job, gone with it. The text, points and actions are the transcript's
-- substance: they live here only and are never logged.

CREATE TABLE summaries (
    job_id          TEXT PRIMARY KEY REFERENCES jobs (id) ON DELETE CASCADE,
    state           TEXT NOT NULL CHECK (state IN ('pending', 'done', 'failed')),
    text            TEXT,
    -- JSON arrays: ["point", ...] and [{"text", "who"}, ...].
    points          TEXT NOT NULL DEFAULT '[]',
    actions         TEXT NOT NULL DEFAULT '[]',
    model           TEXT,
    prompt_version  INTEGER NOT NULL,
    -- The digest of the transcript it was built from: another one now means stale.
    source          TEXT,
    error           TEXT,
    attempts        INTEGER NOT NULL DEFAULT 0,
    acquisition_id  TEXT,
    -- INTEGER microseconds since the Unix epoch (ADR 3).
    acquire_time    INTEGER,
    delay_time      INTEGER,
    requested       INTEGER NOT NULL,
    created         INTEGER
) STRICT, WITHOUT ROWID;

-- The acquire reads pending summaries in the order they were asked for.
CREATE INDEX summaries_pending ON summaries (requested, job_id) WHERE state = 'pending';
