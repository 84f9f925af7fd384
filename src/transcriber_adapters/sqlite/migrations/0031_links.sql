-- 0031: links in (SPEC §28, ADR 85). A job may start in the new state 'fetch', where
-- its step downloads the recording behind source_url and stores it as the job's source.
-- source_url: the http(s) link as sent; NULL for a recording sent as bytes. It may carry
-- a secret (a signed share): it is never logged and goes with the job.
-- progress_total: what progress_seconds counts towards when the job's duration is not it:
-- in 'fetch' the bytes the site declares (progress_seconds then counts bytes); NULL when
-- unknown, and for a recognition. Cleared with the other progress columns.

ALTER TABLE jobs ADD COLUMN source_url TEXT;
ALTER TABLE jobs ADD COLUMN progress_total REAL
    CHECK (progress_total IS NULL OR progress_total >= 0);

-- The state CHECK takes 'fetch'. SQLite cannot change a CHECK in place, and making the
-- table again would cascade the drop of jobs into its deliveries and parts (foreign keys
-- stay on inside the migration's transaction). A CHECK that allows one more value
-- changes no stored row, so its text is edited where SQLite keeps it (the documented
-- way for such changes: sqlite.org/lang_altertable.html, "otheralter"); RESET reloads
-- the schema, and the ALTERs above bumped the schema cookie that other connections
-- reread.
PRAGMA writable_schema = ON;
UPDATE sqlite_schema
    SET sql = replace(sql, '(state IN (''convert'', ', '(state IN (''fetch'', ''convert'', ')
    WHERE type = 'table' AND name = 'jobs';
PRAGMA writable_schema = RESET;
