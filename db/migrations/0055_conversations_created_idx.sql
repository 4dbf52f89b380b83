-- GET /inbox/conversations is ordered by created_at (the spec's order), then id; the inbox's activity order keeps
-- conversations_activity_idx.
CREATE INDEX IF NOT EXISTS "conversations_created_idx" ON "conversations" USING btree ("account_id","created_at","id");
