-- 0004: what the sender asked of the recognition (SPEC §18, §19), as SQLite's 0013.
-- language_requested: an ISO 639-1 code, NULL for "auto" (and for every job
-- made before this migration). prompt: text that primes the recognizer
-- (Whisper's initial prompt), NULL for none. task: transcribe, or translate
-- to English.

ALTER TABLE jobs ADD COLUMN language_requested text
    CHECK (language_requested IS NULL OR length(language_requested) BETWEEN 2 AND 3);
ALTER TABLE jobs ADD COLUMN prompt text CHECK (prompt IS NULL OR length(prompt) <= 4000);
ALTER TABLE jobs ADD COLUMN task text NOT NULL DEFAULT 'transcribe'
    CHECK (task IN ('transcribe', 'translate'));
