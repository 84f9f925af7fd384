-- 0013: speakers (SPEC §18, ADR 45).
-- speakers_wanted: NULL when speakers are not labelled, 0 to find out how
-- many, else exactly that many (1 to 10). speakers: the voices the words are
-- labelled with, JSON [{"id": "S1", "name": "Speaker 1"}, ...]; a word's
-- speaker is its "speaker" in the words column.

ALTER TABLE jobs ADD COLUMN speakers_wanted INTEGER
    CHECK (speakers_wanted IS NULL OR (speakers_wanted BETWEEN 0 AND 10));
ALTER TABLE jobs ADD COLUMN speakers TEXT NOT NULL DEFAULT '[]';
