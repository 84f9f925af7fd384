-- 0012: an API caller's read of a job is filtered by its owner in the index (red team 3).
-- With api_tokens, GET/DELETE name a job and the caller's token digest: the lookup
-- seeks (owner, id), so another token's job is refused without reading its row
-- (a long transcript made that 404 measurably slower than an unknown id's).
CREATE INDEX jobs_owner_id ON jobs (owner, id) WHERE owner IS NOT NULL;
