CREATE TABLE IF NOT EXISTS "newsletters" (
  "account_id" uuid NOT NULL REFERENCES "accounts"("id") ON DELETE CASCADE,
  "id" uuid NOT NULL,
  "name" text NOT NULL,
  "subject" text NOT NULL,
  "content" text NOT NULL,
  "channel" text DEFAULT 'chat' NOT NULL,
  "status" text NOT NULL,
  "phase" text NOT NULL,
  "cta" jsonb,
  "segment" jsonb,
  "scheduled_at" timestamp with time zone,
  "template_id" uuid,
  "stop_reason" text,
  "resumes_at" timestamp with time zone,
  "fanout_cursor" uuid,
  "started_at" timestamp with time zone,
  "finished_at" timestamp with time zone,
  "created_at" timestamp with time zone NOT NULL,
  "updated_at" timestamp with time zone NOT NULL,
  CONSTRAINT "newsletters_account_id_id_pk" PRIMARY KEY ("account_id", "id")
);
--> statement-breakpoint
CREATE INDEX IF NOT EXISTS "newsletters_created_idx" ON "newsletters" USING btree ("account_id", "created_at" DESC, "id" DESC);
--> statement-breakpoint
-- One send record per (newsletter, contact): a fan-out that runs again after a crash skips who already has one.
CREATE UNIQUE INDEX IF NOT EXISTS "template_sends_newsletter_contact_uq" ON "template_sends" ("account_id", "origin_id", "contact_id") WHERE "origin" = 'newsletter';
