-- The team inbox's routing (issue 48): per account the automatic assignment (off or round-robin with a limit of open
-- conversations per member), opening hours in a time zone with days off, and the away message; per member whether
-- they are available and when they were last given a conversation (the round-robin's state); the conversations
-- waiting for a member with room; a record of every automatic assignment; the away messages sent or skipped.
CREATE TABLE IF NOT EXISTS "inbox_settings" (
  "account_id" uuid PRIMARY KEY NOT NULL REFERENCES "accounts"("id") ON DELETE CASCADE,
  "assignment_mode" text NOT NULL DEFAULT 'off',
  "assignment_limit" integer NOT NULL DEFAULT 10,
  "hours_enabled" boolean NOT NULL DEFAULT false,
  "timezone" text NOT NULL DEFAULT 'UTC',
  "weekly_hours" jsonb NOT NULL DEFAULT '{}'::jsonb,
  "days_off" jsonb NOT NULL DEFAULT '[]'::jsonb,
  "away_enabled" boolean NOT NULL DEFAULT false,
  "away_message" text NOT NULL DEFAULT '',
  "away_interval_minutes" integer NOT NULL DEFAULT 720,
  "updated_at" timestamp with time zone NOT NULL DEFAULT now(),
  CONSTRAINT "inbox_settings_mode_ck" CHECK ("assignment_mode" IN ('off', 'round_robin'))
);
--> statement-breakpoint
CREATE TABLE IF NOT EXISTS "member_availability" (
  "account_id" uuid NOT NULL REFERENCES "accounts"("id") ON DELETE CASCADE,
  "user_id" uuid NOT NULL,
  "available" boolean NOT NULL DEFAULT false,
  "last_assigned_at" timestamp with time zone,
  "last_turn" bigint NOT NULL DEFAULT 0,
  "updated_at" timestamp with time zone NOT NULL DEFAULT now(),
  CONSTRAINT "member_availability_pk" PRIMARY KEY ("account_id", "user_id")
);
--> statement-breakpoint
CREATE TABLE IF NOT EXISTS "assignment_queue" (
  "account_id" uuid NOT NULL REFERENCES "accounts"("id") ON DELETE CASCADE,
  "conversation_id" uuid NOT NULL,
  "queued_at" timestamp with time zone NOT NULL,
  CONSTRAINT "assignment_queue_pk" PRIMARY KEY ("account_id", "conversation_id")
);
--> statement-breakpoint
CREATE INDEX IF NOT EXISTS "assignment_queue_order_idx" ON "assignment_queue" ("account_id", "queued_at", "conversation_id");
--> statement-breakpoint
CREATE TABLE IF NOT EXISTS "conversation_assignments" (
  "account_id" uuid NOT NULL REFERENCES "accounts"("id") ON DELETE CASCADE,
  "id" uuid NOT NULL,
  "conversation_id" uuid NOT NULL,
  "assignee_id" uuid,
  "reason" text NOT NULL,
  "actor_id" uuid,
  "created_at" timestamp with time zone NOT NULL,
  CONSTRAINT "conversation_assignments_pk" PRIMARY KEY ("account_id", "id")
);
--> statement-breakpoint
CREATE INDEX IF NOT EXISTS "conversation_assignments_conversation_idx" ON "conversation_assignments" ("account_id", "conversation_id", "created_at");
--> statement-breakpoint
CREATE TABLE IF NOT EXISTS "away_replies" (
  "account_id" uuid NOT NULL REFERENCES "accounts"("id") ON DELETE CASCADE,
  "id" uuid NOT NULL,
  "conversation_id" uuid NOT NULL,
  "contact_id" uuid NOT NULL,
  "inbound_message_id" uuid NOT NULL,
  "state" text NOT NULL,
  "reason" text,
  "message_id" uuid,
  "created_at" timestamp with time zone NOT NULL,
  "updated_at" timestamp with time zone NOT NULL,
  CONSTRAINT "away_replies_pk" PRIMARY KEY ("account_id", "id")
);
--> statement-breakpoint
CREATE INDEX IF NOT EXISTS "away_replies_conversation_idx" ON "away_replies" ("account_id", "conversation_id", "created_at");
--> statement-breakpoint
CREATE INDEX IF NOT EXISTS "conversations_assignee_idx" ON "conversations" ("account_id", "assignee_id") WHERE "assignee_id" IS NOT NULL;
