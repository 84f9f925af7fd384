-- 0004: what an Idempotency-Key was first used with (SPEC §17, ADR 21).
-- SHA-256 of the uploaded bytes, 64 lower-case hex digits, set when the
-- upload carried a key; NULL for every other job and for jobs made before
-- this migration (a replay of those is answered without a comparison).

ALTER TABLE jobs ADD COLUMN upload_digest TEXT
    CHECK (upload_digest IS NULL OR length(upload_digest) = 64);
