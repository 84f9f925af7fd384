-- 0023: the language a person chose for the pages (SPEC §26, ADR 77), as SQLite's 0032:
-- a catalog's code such as 'ru' or 'en'; NULL until they choose.

ALTER TABLE people ADD COLUMN language text;
