-- 0023: turns on a spent budget (ADR 61). A recording or part told to wait
-- for a SpeechKit start is promised the next token; its turn is kept here,
-- beside the budget's bucket, so every process admits it at that moment and
-- no other take overtakes it. Times are INTEGER microseconds (ADR 3).
CREATE TABLE budget_turns (
    name    TEXT NOT NULL,
    -- Who waits: the id of the recording's or part's audio.
    holder  TEXT NOT NULL,
    due     INTEGER NOT NULL,
    PRIMARY KEY (name, holder)
) STRICT, WITHOUT ROWID;
