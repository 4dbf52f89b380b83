-- Custom fields (issue 33): an account's field definitions, and each contact's values as one jsonb object
-- {key: value} beside the spec's fields. Adding a column with a constant default rewrites nothing (PostgreSQL 11+).
CREATE TABLE IF NOT EXISTS "contact_fields" (
  "account_id" uuid NOT NULL REFERENCES "accounts"("id") ON DELETE CASCADE,
  "key" text NOT NULL,
  "label" text NOT NULL,
  "type" text NOT NULL,
  "options" jsonb,
  "default_value" jsonb,
  "max_length" integer,
  "position" integer NOT NULL DEFAULT 0,
  "created_at" timestamp with time zone NOT NULL DEFAULT now(),
  "updated_at" timestamp with time zone NOT NULL DEFAULT now(),
  CONSTRAINT "contact_fields_pk" PRIMARY KEY ("account_id", "key")
);
--> statement-breakpoint
ALTER TABLE "contacts" ADD COLUMN IF NOT EXISTS "fields" jsonb NOT NULL DEFAULT '{}'::jsonb;
