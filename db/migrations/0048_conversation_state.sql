-- A conversation is open or closed (closed by a person; the customer's next message opens it again) and may be
-- assigned to one member of the account (the user id; null: nobody).
ALTER TABLE "conversations" ADD COLUMN IF NOT EXISTS "status" text DEFAULT 'open' NOT NULL;
--> statement-breakpoint
ALTER TABLE "conversations" ADD COLUMN IF NOT EXISTS "closed_at" timestamp with time zone;
--> statement-breakpoint
ALTER TABLE "conversations" ADD COLUMN IF NOT EXISTS "assignee_id" uuid;
