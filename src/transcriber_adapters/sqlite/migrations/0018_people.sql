-- 0018: the people of the workspace, their invites, API tokens and sessions (SPEC §20, ADR 55).
-- Times are INTEGER microseconds since the Unix epoch (ADR 3). Secrets (invite
-- links, tokens, session ids) are kept only as their SHA-256 in hex.

CREATE TABLE people (
    id             TEXT PRIMARY KEY,
    -- The sign-in name the owner chose.
    name           TEXT NOT NULL UNIQUE,
    -- argon2id; NULL until the invite is used.
    password_hash  TEXT,
    created        INTEGER NOT NULL,
    -- When the owner disabled the person; NULL while they may sign in.
    disabled       INTEGER
) STRICT;

-- One-time links; expires is the store's clock at the invite plus its lifetime.
CREATE TABLE person_invites (
    token_hash  TEXT PRIMARY KEY,
    person_id   TEXT NOT NULL REFERENCES people (id),
    expires     INTEGER NOT NULL,
    -- When the link was used; a used link never works again.
    used        INTEGER
) STRICT;

CREATE TABLE person_tokens (
    token_hash  TEXT PRIMARY KEY,
    id          TEXT NOT NULL UNIQUE,
    person_id   TEXT NOT NULL REFERENCES people (id),
    label       TEXT NOT NULL,
    created     INTEGER NOT NULL
) STRICT;

-- The tokens page lists a person's tokens newest first.
CREATE INDEX person_tokens_person ON person_tokens (person_id, created);

-- As admin_sessions (0003), with whose session it is.
CREATE TABLE person_sessions (
    id_hash    TEXT PRIMARY KEY,
    person_id  TEXT NOT NULL REFERENCES people (id),
    csrf       TEXT NOT NULL,
    created    INTEGER NOT NULL,
    last_seen  INTEGER NOT NULL,
    expires    INTEGER NOT NULL,
    flash      TEXT
) STRICT;

CREATE INDEX person_sessions_expires ON person_sessions (expires);
-- Disabling a person ends their sessions by person.
CREATE INDEX person_sessions_person ON person_sessions (person_id);
