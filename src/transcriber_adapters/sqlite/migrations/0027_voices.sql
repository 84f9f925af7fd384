-- 0027: voices remembered (SPEC §25, ADR 72, 73). A voice print is biometric data:
-- it lives in its owner's rows only. A job's speakers' prints live in the job's own row
-- (prints, JSON text: [{"speaker", "vector"}]) and go with it; a remembered voice's print
-- lives in its voices row and goes with it (or with its owner, forget_owner).

ALTER TABLE jobs ADD COLUMN prints TEXT NOT NULL DEFAULT '[]';

CREATE TABLE voices (
    id       TEXT PRIMARY KEY,
    -- Whose: a job owner key, person:<id> or a static token's digest.
    owner    TEXT NOT NULL,
    name     TEXT NOT NULL,
    -- INTEGER microseconds since the Unix epoch (ADR 3).
    created  INTEGER NOT NULL,
    samples  INTEGER NOT NULL CHECK (samples >= 1),
    -- The sum of its samples' unit prints, as a JSON array of numbers.
    vector   TEXT NOT NULL
) STRICT;

-- Every read is one owner's voices, oldest first.
CREATE INDEX voices_owner ON voices (owner, created);
