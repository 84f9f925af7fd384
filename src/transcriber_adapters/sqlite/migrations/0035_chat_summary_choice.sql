-- 0035: a chat's summary choice has three values (SPEC §21, §27, ADR 92).
-- telegram_chats.summary: 1 after /summary auto, 0 after /summary off, NULL when
-- the chat never chose: its recordings follow [llm] auto_summary. Before, 0 stood
-- for both "never chose" and "off", and /summary off could not turn off a
-- service's auto_summary; a 0 kept here is taken as never chosen, as it behaved.
-- SQLite cannot change a column's NOT NULL in place: the table is made again
-- with the same columns (as 0034 did for deliveries).
CREATE TABLE telegram_chats_0035 (
    chat_id  INTEGER PRIMARY KEY,
    language TEXT CHECK (language IS NULL OR (length(language) BETWEEN 2 AND 3)),
    mode     TEXT NOT NULL DEFAULT 'auto' CHECK (mode IN ('auto', 'command')),
    updated  INTEGER NOT NULL,
    summary  INTEGER CHECK (summary IS NULL OR summary IN (0, 1))
) STRICT;
INSERT INTO telegram_chats_0035 (chat_id, language, mode, updated, summary)
    SELECT chat_id, language, mode, updated, CASE WHEN summary = 1 THEN 1 END
    FROM telegram_chats;
DROP TABLE telegram_chats;
ALTER TABLE telegram_chats_0035 RENAME TO telegram_chats;
