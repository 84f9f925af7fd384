-- 0022: links in (SPEC §28, ADR 85), as SQLite's 0031. A job may start in 'fetch',
-- where its step downloads the recording behind source_url (never logged) and stores it
-- as the job's source. progress_total: in 'fetch' the bytes the site declares
-- (progress_seconds then counts bytes); NULL when unknown, and for a recognition.

ALTER TABLE jobs ADD COLUMN source_url text;
ALTER TABLE jobs ADD COLUMN progress_total double precision
    CHECK (progress_total IS NULL OR progress_total >= 0);

ALTER TABLE jobs DROP CONSTRAINT jobs_state_check;
ALTER TABLE jobs ADD CONSTRAINT jobs_state_check
    CHECK (state IN ('fetch', 'convert', 'recognize', 'check', 'done', 'failed', 'dead'));
