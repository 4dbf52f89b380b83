-- The console's title and navigation show the account's unread messages: the sum over its conversations with any,
-- read from this partial index (only conversations with unread messages are in it) by GET /app/conversations.
CREATE INDEX IF NOT EXISTS "conversations_unread_idx" ON "conversations" ("account_id", "unread_count") WHERE "unread_count" > 0;
