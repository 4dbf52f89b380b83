-- WhatsApp's daily limit of new conversations per number (tiers 250, 1,000, 10,000, 100,000; NULL = unlimited).
ALTER TABLE "channel_connections" ADD COLUMN IF NOT EXISTS "daily_limit" integer;
--> statement-breakpoint
-- When each contact's latest business-initiated conversation started: a contact counts against the number's
-- daily limit once per rolling 24 hours (src/modules/channels/daily-limit.ts).
CREATE TABLE IF NOT EXISTS "conversation_starts" (
  "account_id" uuid NOT NULL REFERENCES "accounts"("id") ON DELETE CASCADE,
  "contact_id" uuid NOT NULL,
  "started_at" timestamp with time zone NOT NULL,
  PRIMARY KEY ("account_id", "contact_id")
);
--> statement-breakpoint
CREATE INDEX IF NOT EXISTS "conversation_starts_window_idx" ON "conversation_starts" ("account_id", "started_at");
