-- 0020: full-text search over done transcripts (SPEC §20, ADR 58).
-- jobs_search indexes jobs.text of every done job, under the job's rowid. It is
-- contentless (content=''): it keeps only the index, the text stays in jobs.
-- unicode61 folds case (Latin, Cyrillic, Greek...) and splits at anything but
-- letters and digits; diacritics are kept (remove_diacritics 0) so "е" and "ё",
-- "и" and "й" stay apart, as the core's rule keeps them.
-- A search asks only which rows hold each word's prefix (the core finds where), so
-- the index keeps no positions (detail none) and no column sizes (no bm25), and
-- keeps 2-, 3- and 4-letter prefixes of its own: a short prefix of common words
-- ("the", "про") reads one list instead of merging hundreds (bench/search.py).
CREATE VIRTUAL TABLE jobs_search USING fts5 (
    text,
    content = '',
    detail = 'none',
    columnsize = 0,
    prefix = '2 3 4',
    tokenize = 'unicode61 remove_diacritics 0'
);

-- The triggers keep the index in step inside the very statement, hence the
-- transaction, that writes a job's state or text: a step's save, a correction,
-- an owner's edit, a deletion, a retention sweep, or an edit by hand in the sqlite3
-- shell. A contentless table forgets a row by the 'delete' command with the
-- values it was indexed with: old.text is exactly that.
CREATE TRIGGER jobs_search_insert AFTER INSERT ON jobs
WHEN new.state = 'done' AND new.text IS NOT NULL
BEGIN
    INSERT INTO jobs_search (rowid, text) VALUES (new.rowid, new.text);
END;

-- Every save lists state and text, so the WHEN keeps the work to real changes.
CREATE TRIGGER jobs_search_update AFTER UPDATE OF state, text ON jobs
WHEN (old.state = 'done' OR new.state = 'done')
    AND (old.state IS NOT new.state OR old.text IS NOT new.text)
BEGIN
    INSERT INTO jobs_search (jobs_search, rowid, text)
        SELECT 'delete', old.rowid, old.text WHERE old.state = 'done' AND old.text IS NOT NULL;
    INSERT INTO jobs_search (rowid, text)
        SELECT new.rowid, new.text WHERE new.state = 'done' AND new.text IS NOT NULL;
END;

CREATE TRIGGER jobs_search_delete AFTER DELETE ON jobs
WHEN old.state = 'done' AND old.text IS NOT NULL
BEGIN
    INSERT INTO jobs_search (jobs_search, rowid, text) VALUES ('delete', old.rowid, old.text);
END;

-- The done jobs stored before this migration.
INSERT INTO jobs_search (rowid, text)
    SELECT rowid, text FROM jobs WHERE state = 'done' AND text IS NOT NULL;

-- A person's jobs newest first with their rowids (every index entry holds one): a search
-- walks it and looks each rowid up in the matches, reading no row until the last page,
-- and a person's list reads it in order. IF NOT EXISTS: another change may add it too.
CREATE INDEX IF NOT EXISTS jobs_owner_created ON jobs (owner, created, id)
    WHERE owner IS NOT NULL;
