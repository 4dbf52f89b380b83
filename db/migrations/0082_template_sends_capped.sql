-- The frequency cap's count (issue 50): a campaign's marketing send records when it went to the provider (capped_at,
-- set in the transaction that moves it to sending); one index answers "this batch's contacts' marketing sends since
-- T" in one statement.
ALTER TABLE "template_sends" ADD COLUMN IF NOT EXISTS "capped_at" timestamp with time zone;
--> statement-breakpoint
CREATE INDEX IF NOT EXISTS "template_sends_capped_idx" ON "template_sends" USING btree ("account_id", "contact_id", "capped_at") WHERE "capped_at" IS NOT NULL;
