-- 0015: a person's list of recordings (the workspace's page and its poll, ADR 64)
-- reads their newest jobs first, as SQLite's 0024: without it every poll scanned
-- the jobs table.
CREATE INDEX jobs_owner_created ON jobs (owner, created DESC, id DESC) WHERE owner IS NOT NULL;
