-- 0025: summaries in Telegram chats (SPEC §21, §27, ADR 92), as SQLite's 0034.
-- telegram_chats.summary: true after /summary auto, each recording of the chat
-- asks for its summary.

ALTER TABLE telegram_chats ADD COLUMN summary boolean NOT NULL DEFAULT false;

-- A notice may now be a recording's 'summary', written with the summary's save.
ALTER TABLE deliveries DROP CONSTRAINT deliveries_event_check;
ALTER TABLE deliveries ADD CONSTRAINT deliveries_event_check
    CHECK (event IN ('accepted', 'progress', 'done', 'failed', 'dead', 'summary'));
