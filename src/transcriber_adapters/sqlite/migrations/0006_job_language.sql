-- 0006: the language a recognizer heard (ADR 28).
-- An ISO 639 code such as "en", set when the job is done by a recognizer
-- that detects or knows the language (Whisper); NULL otherwise, and for
-- every job made before this migration.

ALTER TABLE jobs ADD COLUMN language TEXT
    CHECK (language IS NULL OR (length(language) BETWEEN 1 AND 16));
