-- 0018: voices remembered (SPEC §25, ADR 72, 73), as SQLite's 0027. A voice print is
-- biometric data: it lives in its owner's rows only. A job's speakers' prints live in the
-- job's own row (prints, JSON text) and go with it; a voice's print in its voices row.

ALTER TABLE jobs ADD COLUMN prints text NOT NULL DEFAULT '[]';

CREATE TABLE voices (
    id       text COLLATE "C" PRIMARY KEY,
    -- Whose: a job owner key, person:<id> or a static token's digest.
    owner    text COLLATE "C" NOT NULL,
    name     text NOT NULL,
    created  timestamptz NOT NULL,
    samples  integer NOT NULL CHECK (samples >= 1),
    -- The sum of its samples' unit prints, as a JSON array of numbers.
    vector   text NOT NULL
);

CREATE INDEX voices_owner ON voices (owner, created);
