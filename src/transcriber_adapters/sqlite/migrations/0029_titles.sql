-- 0029: a recording's title, the person's own name for it (SPEC §26, ADR 79). NULL: none,
-- shown as a dated default. Written by the insert and by save_title alone; no save of the
-- pipeline touches it. At most 200 characters (the core checks; the row only bounds it).

ALTER TABLE jobs ADD COLUMN title TEXT CHECK (title IS NULL OR length(title) BETWEEN 1 AND 200);
