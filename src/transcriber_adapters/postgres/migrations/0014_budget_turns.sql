-- 0014: turns on a spent budget (ADR 61). A recording or part told to wait
-- for a SpeechKit start is promised the next token; its turn is kept here,
-- beside the budget's bucket, so every process admits it at that moment and
-- no other take overtakes it. Written under the budget's row lock.
CREATE TABLE budget_turns (
    name    text COLLATE "C" NOT NULL,
    -- Who waits: the id of the recording's or part's audio.
    holder  text COLLATE "C" NOT NULL,
    due     timestamptz NOT NULL,
    PRIMARY KEY (name, holder)
);
