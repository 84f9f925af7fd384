-- 0017: Telegram in chats (SPEC §21, ADR 53).
-- telegram_poll_lease: the one row saying which process polls Telegram now,
-- until when, and the fence that grows at each change of holder.
-- telegram_chats: each chat's choices; a chat without a row has the defaults
-- (language detected, every recording transcribed).

CREATE TABLE telegram_poll_lease (
    name    TEXT PRIMARY KEY CHECK (name = 'poller'),
    holder  TEXT NOT NULL,
    fence   INTEGER NOT NULL,
    expires INTEGER NOT NULL
) STRICT;

CREATE TABLE telegram_chats (
    chat_id  INTEGER PRIMARY KEY,
    language TEXT CHECK (language IS NULL OR (length(language) BETWEEN 2 AND 3)),
    mode     TEXT NOT NULL DEFAULT 'auto' CHECK (mode IN ('auto', 'command')),
    updated  INTEGER NOT NULL
) STRICT;
