-- 0008: Telegram in chats (SPEC §21, ADR 53), as SQLite's 0017.
-- telegram_poll_lease: the one row saying which process polls Telegram now,
-- until when (the database's clock), and the fence that grows at each change
-- of holder. telegram_chats: each chat's choices; a chat without a row has
-- the defaults (language detected, every recording transcribed).

CREATE TABLE telegram_poll_lease (
    name    text PRIMARY KEY CHECK (name = 'poller'),
    holder  text NOT NULL,
    fence   bigint NOT NULL,
    expires timestamptz NOT NULL
);

CREATE TABLE telegram_chats (
    chat_id  bigint PRIMARY KEY,
    language text CHECK (language IS NULL OR length(language) BETWEEN 2 AND 3),
    mode     text NOT NULL DEFAULT 'auto' CHECK (mode IN ('auto', 'command')),
    updated  timestamptz NOT NULL
);
