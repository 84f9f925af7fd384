-- 0024: a person's list of recordings (the workspace's page and its poll, ADR 64)
-- reads their newest jobs first: the index hands them over in that order, so a
-- page costs its rows, not a sort of every job the person ever sent.
CREATE INDEX jobs_owner_created ON jobs (owner, created DESC, id DESC) WHERE owner IS NOT NULL;
