-- 0034: summaries in Telegram chats (SPEC §21, §27, ADR 92).
-- telegram_chats.summary: 1 after /summary auto, each recording of the chat asks
-- for its summary; a chat without a row, or 0, asks for none.

ALTER TABLE telegram_chats ADD COLUMN summary INTEGER NOT NULL DEFAULT 0
    CHECK (summary IN (0, 1));

-- A notice may now be a recording's 'summary', written with the summary's save.
-- SQLite cannot change a CHECK in place: the table is made again with the same
-- columns and indexes (as 0015 did).
CREATE TABLE deliveries_0034 (
    id              INTEGER PRIMARY KEY,
    job_id          TEXT NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
    kind            TEXT NOT NULL CHECK (kind IN ('webhook', 'notice')),
    event           TEXT NOT NULL
        CHECK (event IN ('accepted', 'progress', 'done', 'failed', 'dead', 'summary')),
    attempts        INTEGER NOT NULL DEFAULT 0,
    acquisition_id  TEXT,
    acquire_time    INTEGER,
    due             INTEGER NOT NULL,
    created         INTEGER NOT NULL,
    last_error      TEXT
) STRICT;
INSERT INTO deliveries_0034
    (id, job_id, kind, event, attempts, acquisition_id, acquire_time, due, created, last_error)
    SELECT id, job_id, kind, event, attempts, acquisition_id, acquire_time, due, created,
        last_error
    FROM deliveries;
DROP TABLE deliveries;
ALTER TABLE deliveries_0034 RENAME TO deliveries;
CREATE INDEX deliveries_due ON deliveries (due, id);
CREATE INDEX deliveries_job ON deliveries (job_id, kind, id);
