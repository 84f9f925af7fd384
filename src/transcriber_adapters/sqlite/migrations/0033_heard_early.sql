-- 0033: a split recording's speakers heard beside its parts' recognition (ADR 89), kept
-- until the join labels the words with them: JSON text {"turns": [[label, start, end]],
-- "prints": {label: vector}}; NULL when nothing was heard early. The prints are biometric
-- data (ADR 73): they live in the job's own row, go with it, and are cleared at its end.

ALTER TABLE jobs ADD COLUMN heard TEXT;
