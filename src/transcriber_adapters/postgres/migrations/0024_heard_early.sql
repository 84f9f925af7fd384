-- 0024: a split recording's speakers heard beside its parts' recognition (ADR 89), as
-- SQLite's 0033: JSON text, NULL when nothing was heard early, cleared at the job's end.

ALTER TABLE jobs ADD COLUMN heard text;
