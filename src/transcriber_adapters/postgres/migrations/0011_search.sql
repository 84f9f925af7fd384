-- 0011: full-text search over done transcripts (SPEC §20, ADR 58), as SQLite's 0020.
-- jobs.search is the tsvector of a done job's text, NULL for any other job. A stored
-- generated column: PostgreSQL computes it in the very statement that writes the row,
-- so the index follows a step's save, a correction, an owner's edit or an edit by hand
-- in psql with no code of ours, and adding it computes it for every existing job.
-- 'simple': lower case (by the database's LC_CTYPE) and no stemming, so Russian,
-- English and any mix are indexed alike; the core's rule (prefix of a word) decides.

-- tsvector holds at most 1 MB. A natural transcript of the longest recording allowed
-- stays far below it; a pathological one (tens of thousands of distinct long tokens)
-- would make the statement that ends its job fail, so its first 200,000 characters
-- are indexed instead. IMMUTABLE: the result depends on the text alone.
CREATE FUNCTION transcript_search_vector(body text) RETURNS tsvector
    LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
AS $$
BEGIN
    RETURN to_tsvector('simple'::regconfig, body);
EXCEPTION WHEN program_limit_exceeded THEN
    RETURN to_tsvector('simple'::regconfig, left(body, 200000));
END
$$;

ALTER TABLE jobs ADD COLUMN search tsvector GENERATED ALWAYS AS (
    CASE WHEN state = 'done' AND text IS NOT NULL THEN transcript_search_vector(text) END
) STORED;

-- Only done jobs have a vector; the rest cost the index nothing.
CREATE INDEX jobs_search ON jobs USING gin (search) WHERE search IS NOT NULL;

-- A person's jobs newest first: for a word in most of their transcripts the planner
-- walks this and tests each row's vector until the page is full, instead of fetching
-- every matching row to sort them; for a rarer word it takes the GIN index. It serves
-- a person's list too. IF NOT EXISTS: another change may add it too.
CREATE INDEX IF NOT EXISTS jobs_owner_created ON jobs (owner, created, id)
    WHERE owner IS NOT NULL;
