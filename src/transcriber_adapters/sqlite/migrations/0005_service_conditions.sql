-- 0005: the service's own faults that workers ran into (disk full, credentials
-- refused, bucket missing), so /health in every process can name them (SPEC §17).
-- Times are INTEGER microseconds since the Unix epoch (ADR 3).

-- One row per cause and place: scope is '' for the whole deployment
-- (credentials, a bucket) or a host name (that host's disk).
CREATE TABLE service_conditions (
    code     TEXT NOT NULL,
    scope    TEXT NOT NULL,
    -- Our own words for the log and the admin page, never a vendor's text.
    message  TEXT NOT NULL,
    -- First seen since it last cleared.
    since    INTEGER NOT NULL,
    -- Last seen; a condition not seen again for a while has aged out.
    seen     INTEGER NOT NULL,
    PRIMARY KEY (code, scope)
) STRICT, WITHOUT ROWID;
