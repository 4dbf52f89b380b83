-- herold status counts the last hour's send outcomes: per account, a range of this index by the outcome's time (a
-- failure's, a skip's, else the sending's) instead of a scan of every send record. Not partial: the planner keeps
-- statistics of an expression index only when it covers the whole table, and without them it guesses a third of the
-- table and scans it.
CREATE INDEX IF NOT EXISTS "template_sends_outcome_idx" ON "template_sends" ("account_id", (coalesce("failed_at", "skipped_at", "sent_at")));
