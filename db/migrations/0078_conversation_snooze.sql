-- Snooze and the inbox's views (issue 48): a conversation may be `snoozed` until a time (snoozed_until, woken by a
-- durable job) or until the customer writes (snooze_until_reply); the views (mine, unassigned, all, snoozed,
-- closed) and their bounded counts read two indexes: by status and activity, and the open ones by assignee.
ALTER TABLE "conversations" ADD COLUMN IF NOT EXISTS "snoozed_until" timestamp with time zone;
--> statement-breakpoint
ALTER TABLE "conversations" ADD COLUMN IF NOT EXISTS "snooze_until_reply" boolean NOT NULL DEFAULT false;
--> statement-breakpoint
CREATE INDEX IF NOT EXISTS "conversations_status_idx" ON "conversations" USING btree ("account_id", "status", "last_message_at", "id");
--> statement-breakpoint
CREATE INDEX IF NOT EXISTS "conversations_open_assignee_idx" ON "conversations" USING btree ("account_id", "assignee_id", "last_message_at", "id") WHERE "status" = 'open';
