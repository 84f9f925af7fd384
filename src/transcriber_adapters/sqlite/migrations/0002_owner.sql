-- 0002: the admin panel's owner account and the service's signing secrets (SPEC §8).
-- Times are INTEGER microseconds since the Unix epoch (ADR 3).

-- At most one row: the CHECK pins the key, so a second owner is a conflict
-- that INSERT ... ON CONFLICT DO NOTHING turns into "not created".
CREATE TABLE owner (
    id             INTEGER PRIMARY KEY CHECK (id = 1),
    -- A slow hash in its own self-describing format (argon2id); never the password.
    password_hash  TEXT NOT NULL,
    created        INTEGER NOT NULL
) STRICT;

-- Random keys made once and kept, so that what they sign (session cookies)
-- survives a restart. Never shown and never logged.
CREATE TABLE secrets (
    name     TEXT PRIMARY KEY,
    value    BLOB NOT NULL,
    created  INTEGER NOT NULL
) STRICT;
