-- 0026: a chat's summary choice has three values, as SQLite's 0035.
-- telegram_chats.summary: true after /summary auto, false after /summary off,
-- NULL when the chat never chose: its recordings follow [llm] auto_summary. A
-- false kept before stood for "never chose" too, and is taken as such.
ALTER TABLE telegram_chats ALTER COLUMN summary DROP NOT NULL;
ALTER TABLE telegram_chats ALTER COLUMN summary DROP DEFAULT;
UPDATE telegram_chats SET summary = NULL WHERE NOT summary;
