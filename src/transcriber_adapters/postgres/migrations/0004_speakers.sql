-- 0004: speakers (SPEC §18, ADR 45), as SQLite's 0013.
-- speakers is JSON text, as SQLite keeps it.

ALTER TABLE jobs ADD COLUMN speakers_wanted integer
    CHECK (speakers_wanted IS NULL OR (speakers_wanted BETWEEN 0 AND 10));
ALTER TABLE jobs ADD COLUMN speakers text NOT NULL DEFAULT '[]';
