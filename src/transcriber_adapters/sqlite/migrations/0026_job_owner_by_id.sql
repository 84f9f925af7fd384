-- 0026: an open API's read of a job decides "a person's?" in an index (red team 4, ADR 68).
-- Without api_tokens the job id is the capability, except for a person's job (ADR 55):
-- the lookup seeks (id, owner) and reads the row only when its owner is not a person,
-- so a person's job is refused without reading its long transcript (its 404 took
-- 5.6 ms against 0.4 ms for an unknown id).
CREATE INDEX jobs_id_owner ON jobs (id, owner);
