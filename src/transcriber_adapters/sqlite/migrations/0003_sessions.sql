-- 0003: server-side admin sessions and the login back-off (SPEC §17 "Sessions", ADR 17).
-- Times are INTEGER microseconds since the Unix epoch (ADR 3).

-- One row per login. The browser's cookie holds a random id; this table holds
-- only its SHA-256, so a copy of the database opens no session. Logout deletes
-- the row, a password change deletes them all.
CREATE TABLE admin_sessions (
    id_hash    TEXT PRIMARY KEY,
    csrf       TEXT NOT NULL,
    created    INTEGER NOT NULL,
    last_seen  INTEGER NOT NULL,
    -- min(last_seen + idle, created + lifetime); refused from this moment on.
    expires    INTEGER NOT NULL,
    -- A one-shot message for the next page.
    flash      TEXT
) STRICT;

-- The sweep deletes by expiry.
CREATE INDEX admin_sessions_expires ON admin_sessions (expires);

-- Wrong passwords per client address, seen by every process on the file.
CREATE TABLE login_failures (
    client  TEXT PRIMARY KEY,
    count   INTEGER NOT NULL CHECK (count > 0),
    last    INTEGER NOT NULL
) STRICT;

-- The sweep forgets by the last failure's time.
CREATE INDEX login_failures_last ON login_failures (last);

-- The key that signed the old cookie sessions: nothing is signed any more,
-- and a readable copy of it was how a local user forged an owner cookie.
DROP TABLE secrets;
