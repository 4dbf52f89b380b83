CREATE TABLE IF NOT EXISTS "followup_sequences" (
  "account_id" uuid NOT NULL REFERENCES "accounts"("id") ON DELETE CASCADE,
  "id" uuid NOT NULL,
  "name" text NOT NULL,
  "status" text NOT NULL,
  "trigger" jsonb NOT NULL,
  "trigger_kind" text NOT NULL,
  "created_at" timestamp with time zone NOT NULL,
  "updated_at" timestamp with time zone NOT NULL,
  CONSTRAINT "followup_sequences_account_id_id_pk" PRIMARY KEY ("account_id", "id")
);
--> statement-breakpoint
CREATE INDEX IF NOT EXISTS "followup_sequences_created_idx" ON "followup_sequences" USING btree ("account_id", "created_at" DESC, "id" DESC);
--> statement-breakpoint
CREATE INDEX IF NOT EXISTS "followup_sequences_trigger_idx" ON "followup_sequences" USING btree ("account_id", "trigger_kind") WHERE "status" = 'active';
--> statement-breakpoint
CREATE TABLE IF NOT EXISTS "followup_steps" (
  "account_id" uuid NOT NULL REFERENCES "accounts"("id") ON DELETE CASCADE,
  "id" uuid NOT NULL,
  "sequence_id" uuid NOT NULL,
  "position" integer NOT NULL,
  "text" text NOT NULL,
  "delay_amount" integer NOT NULL,
  "delay_unit" text NOT NULL,
  "send_time" text,
  "template_id" uuid,
  "created_at" timestamp with time zone NOT NULL,
  "updated_at" timestamp with time zone NOT NULL,
  CONSTRAINT "followup_steps_account_id_id_pk" PRIMARY KEY ("account_id", "id"),
  CONSTRAINT "followup_steps_sequence_fk" FOREIGN KEY ("account_id", "sequence_id") REFERENCES "followup_sequences"("account_id", "id") ON DELETE CASCADE
);
--> statement-breakpoint
CREATE UNIQUE INDEX IF NOT EXISTS "followup_steps_position_uq" ON "followup_steps" ("account_id", "sequence_id", "position");
--> statement-breakpoint
CREATE INDEX IF NOT EXISTS "followup_steps_template_idx" ON "followup_steps" ("account_id", "template_id") WHERE "template_id" IS NOT NULL;
--> statement-breakpoint
CREATE TABLE IF NOT EXISTS "followup_settings" (
  "account_id" uuid PRIMARY KEY REFERENCES "accounts"("id") ON DELETE CASCADE,
  "send_time" text,
  "timezone" text,
  "updated_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE IF NOT EXISTS "followup_enrollments" (
  "account_id" uuid NOT NULL REFERENCES "accounts"("id") ON DELETE CASCADE,
  "id" uuid NOT NULL,
  "sequence_id" uuid NOT NULL,
  "contact_id" uuid NOT NULL,
  "status" text NOT NULL,
  "stop_reason" text,
  "next_position" integer,
  "base_at" timestamp with time zone,
  "next_due_at" timestamp with time zone,
  "job_id" uuid,
  "enrolled_at" timestamp with time zone NOT NULL,
  "finished_at" timestamp with time zone,
  "updated_at" timestamp with time zone NOT NULL,
  CONSTRAINT "followup_enrollments_account_id_id_pk" PRIMARY KEY ("account_id", "id"),
  CONSTRAINT "followup_enrollments_sequence_fk" FOREIGN KEY ("account_id", "sequence_id") REFERENCES "followup_sequences"("account_id", "id") ON DELETE CASCADE
);
--> statement-breakpoint
-- a contact is enrolled in a sequence at most once at a time
CREATE UNIQUE INDEX IF NOT EXISTS "followup_enrollments_active_uq" ON "followup_enrollments" ("account_id", "sequence_id", "contact_id") WHERE "status" = 'active';
--> statement-breakpoint
CREATE INDEX IF NOT EXISTS "followup_enrollments_sequence_idx" ON "followup_enrollments" ("account_id", "sequence_id", "status");
--> statement-breakpoint
CREATE INDEX IF NOT EXISTS "followup_enrollments_contact_idx" ON "followup_enrollments" ("account_id", "contact_id");
--> statement-breakpoint
-- one send record per (follow-up step, contact): a step job that runs again after a crash never queues a second send
CREATE UNIQUE INDEX IF NOT EXISTS "template_sends_followup_contact_uq" ON "template_sends" ("account_id", "origin_id", "contact_id") WHERE "origin" = 'followup';
