-- 0020: a recording's title (SPEC §26, ADR 79), as SQLite's 0029. NULL: none, shown as a
-- dated default. Written by the insert and by save_title alone; no save touches it.

ALTER TABLE jobs ADD COLUMN title text
    CHECK (title IS NULL OR char_length(title) BETWEEN 1 AND 200);
