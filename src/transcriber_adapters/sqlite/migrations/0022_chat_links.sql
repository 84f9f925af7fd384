-- 0022: Telegram chats linked to people by one-time codes (SPEC §20, ADR 60).
-- Times are INTEGER microseconds since the Unix epoch (ADR 3); a code is kept only as
-- the SHA-256 of its normal form.

CREATE TABLE person_link_codes (
    code_hash  TEXT PRIMARY KEY,
    person_id  TEXT NOT NULL REFERENCES people (id),
    -- The store's clock at the code's making plus its lifetime.
    expires    INTEGER NOT NULL,
    -- When it was used; a used code never works again.
    used       INTEGER
) STRICT;

-- A new code of a person replaces their earlier ones.
CREATE INDEX person_link_codes_person ON person_link_codes (person_id);

-- One person per chat: linking again moves the chat.
CREATE TABLE person_chats (
    chat_id    INTEGER PRIMARY KEY,
    person_id  TEXT NOT NULL REFERENCES people (id),
    linked     INTEGER NOT NULL
) STRICT;

CREATE INDEX person_chats_person ON person_chats (person_id);
