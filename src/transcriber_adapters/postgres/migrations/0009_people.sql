-- 0009: the people of the workspace, their invites, API tokens and sessions, as SQLite's 0018
-- (SPEC §20, ADR 55). Secrets are kept only as their SHA-256 in hex.

CREATE TABLE people (
    id             text COLLATE "C" PRIMARY KEY,
    -- The sign-in name the owner chose.
    name           text COLLATE "C" NOT NULL UNIQUE,
    -- argon2id; NULL until the invite is used.
    password_hash  text,
    created        timestamptz NOT NULL,
    -- When the owner disabled the person; NULL while they may sign in.
    disabled       timestamptz
);

-- One-time links; expires is the database's clock at the invite plus its lifetime.
CREATE TABLE person_invites (
    token_hash  text COLLATE "C" PRIMARY KEY,
    person_id   text COLLATE "C" NOT NULL REFERENCES people (id),
    expires     timestamptz NOT NULL,
    -- When the link was used; a used link never works again.
    used        timestamptz
);

CREATE TABLE person_tokens (
    token_hash  text COLLATE "C" PRIMARY KEY,
    id          text COLLATE "C" NOT NULL UNIQUE,
    person_id   text COLLATE "C" NOT NULL REFERENCES people (id),
    label       text NOT NULL,
    created     timestamptz NOT NULL
);
CREATE INDEX person_tokens_person ON person_tokens (person_id, created);

-- As admin_sessions, with whose session it is.
CREATE TABLE person_sessions (
    id_hash    text COLLATE "C" PRIMARY KEY,
    person_id  text COLLATE "C" NOT NULL REFERENCES people (id),
    csrf       text NOT NULL,
    created    timestamptz NOT NULL,
    last_seen  timestamptz NOT NULL,
    expires    timestamptz NOT NULL,
    flash      text
);
CREATE INDEX person_sessions_expires ON person_sessions (expires);
CREATE INDEX person_sessions_person ON person_sessions (person_id);
