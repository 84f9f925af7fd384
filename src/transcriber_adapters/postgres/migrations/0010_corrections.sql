-- 0010: a person's correction of a done job's transcript (SPEC §20, ADR 57), as SQLite's 0019.
-- text and words hold the corrected transcript once corrected; the recognizer's own
-- is kept in original_text and original_words from the first correction on (both NULL:
-- never corrected, or restored). edit_version grows at every correction and restore;
-- a correction is saved only if the version the page read is still the row's.
-- Only save_correction writes these three; no save of the pipeline touches them.

ALTER TABLE jobs ADD COLUMN edit_version integer NOT NULL DEFAULT 0
    CHECK (edit_version >= 0);
ALTER TABLE jobs ADD COLUMN original_text text;
ALTER TABLE jobs ADD COLUMN original_words jsonb;
ALTER TABLE jobs ADD CONSTRAINT jobs_original_check
    CHECK ((original_words IS NULL) = (original_text IS NULL));
