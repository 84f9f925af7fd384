-- 0009: request budgets shared by every process on the file (SpeechKit quotas, ADR 29).
-- Times are INTEGER microseconds since the Unix epoch (ADR 3).

-- One token bucket per budget name: the tokens it held at `updated`. The
-- budget's shape is stored with it so /metrics can show its level.
CREATE TABLE budgets (
    name      TEXT NOT NULL PRIMARY KEY,
    capacity  INTEGER NOT NULL,
    -- The budget's period, in microseconds.
    per       INTEGER NOT NULL,
    tokens    REAL NOT NULL,
    updated   INTEGER NOT NULL
) STRICT, WITHOUT ROWID;
