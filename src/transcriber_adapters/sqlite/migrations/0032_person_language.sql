-- 0032: the language a person chose for the pages (SPEC §26, ADR 77): a catalog's code
-- such as 'ru' or 'en'; NULL until they choose, when their browser's Accept-Language rules.

ALTER TABLE people ADD COLUMN language TEXT;
