-- 0013: Telegram chats linked to people by one-time codes, as SQLite's 0022 (SPEC §20, ADR 60).

CREATE TABLE person_link_codes (
    code_hash  text COLLATE "C" PRIMARY KEY,
    person_id  text COLLATE "C" NOT NULL REFERENCES people (id),
    -- The database's clock at the code's making plus its lifetime.
    expires    timestamptz NOT NULL,
    -- When it was used; a used code never works again.
    used       timestamptz
);
CREATE INDEX person_link_codes_person ON person_link_codes (person_id);

-- One person per chat: linking again moves the chat.
CREATE TABLE person_chats (
    chat_id    bigint PRIMARY KEY,
    person_id  text COLLATE "C" NOT NULL REFERENCES people (id),
    linked     timestamptz NOT NULL
);
CREATE INDEX person_chats_person ON person_chats (person_id);
