-- Knowledge documents split into passages, indexed for full-text search in the account's language.
CREATE TABLE IF NOT EXISTS "knowledge_documents" (
  "account_id" uuid NOT NULL REFERENCES "accounts"("id") ON DELETE CASCADE,
  "id" uuid NOT NULL,
  "title" text NOT NULL,
  "filename" text NOT NULL,
  "format" text NOT NULL,
  "mime" text NOT NULL,
  "size_bytes" integer NOT NULL,
  "source" text NOT NULL,
  "source_url" text,
  "search_config" text NOT NULL,
  "sha256" text NOT NULL,
  "passage_count" integer NOT NULL,
  "char_count" integer NOT NULL,
  "created_at" timestamp with time zone NOT NULL,
  CONSTRAINT "knowledge_documents_account_id_id_pk" PRIMARY KEY ("account_id", "id")
);
--> statement-breakpoint
CREATE INDEX IF NOT EXISTS "knowledge_documents_created_idx" ON "knowledge_documents" USING btree ("account_id", "created_at" DESC, "id" DESC);
--> statement-breakpoint
CREATE TABLE IF NOT EXISTS "knowledge_passages" (
  "account_id" uuid NOT NULL,
  "document_id" uuid NOT NULL,
  "position" integer NOT NULL,
  "page" integer,
  "heading" text DEFAULT '' NOT NULL,
  "text" text NOT NULL,
  "search_config" text NOT NULL,
  "search" tsvector NOT NULL,
  CONSTRAINT "knowledge_passages_pk" PRIMARY KEY ("account_id", "document_id", "position"),
  CONSTRAINT "knowledge_passages_document_fk" FOREIGN KEY ("account_id", "document_id")
    REFERENCES "knowledge_documents"("account_id", "id") ON DELETE CASCADE
);
--> statement-breakpoint
CREATE INDEX IF NOT EXISTS "knowledge_passages_search_idx" ON "knowledge_passages" USING gin ("search");
--> statement-breakpoint
-- The built-in AI per account: off by default.
CREATE TABLE IF NOT EXISTS "ai_settings" (
  "account_id" uuid PRIMARY KEY NOT NULL REFERENCES "accounts"("id") ON DELETE CASCADE,
  "replies_enabled" boolean DEFAULT false NOT NULL,
  "tags_enabled" boolean DEFAULT false NOT NULL,
  "replies_per_contact_per_hour" integer DEFAULT 5 NOT NULL,
  "updated_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
-- One row per inbound message the AI considered: what it decided, the passages its prompt held, the reply sent.
CREATE TABLE IF NOT EXISTS "ai_replies" (
  "account_id" uuid NOT NULL REFERENCES "accounts"("id") ON DELETE CASCADE,
  "id" uuid NOT NULL,
  "inbound_message_id" uuid NOT NULL,
  "contact_id" uuid NOT NULL,
  "conversation_id" uuid,
  "state" text NOT NULL,
  "reason" text,
  "question" text NOT NULL,
  "reply_text" text,
  "message_id" uuid,
  "passages" jsonb DEFAULT '[]'::jsonb NOT NULL,
  "model" text,
  "created_at" timestamp with time zone NOT NULL,
  "updated_at" timestamp with time zone NOT NULL,
  CONSTRAINT "ai_replies_account_id_id_pk" PRIMARY KEY ("account_id", "id")
);
--> statement-breakpoint
CREATE UNIQUE INDEX IF NOT EXISTS "ai_replies_inbound_uq" ON "ai_replies" ("account_id", "inbound_message_id");
--> statement-breakpoint
CREATE INDEX IF NOT EXISTS "ai_replies_contact_idx" ON "ai_replies" ("account_id", "contact_id", "created_at");
--> statement-breakpoint
CREATE INDEX IF NOT EXISTS "ai_replies_created_idx" ON "ai_replies" ("account_id", "created_at" DESC, "id" DESC);
--> statement-breakpoint
CREATE INDEX IF NOT EXISTS "ai_replies_message_idx" ON "ai_replies" ("account_id", "message_id") WHERE "message_id" IS NOT NULL;
--> statement-breakpoint
-- Tags the AI suggested for an inbound message (origin ki), kept for review and the per-contact rate.
CREATE TABLE IF NOT EXISTS "ai_tag_suggestions" (
  "account_id" uuid NOT NULL REFERENCES "accounts"("id") ON DELETE CASCADE,
  "inbound_message_id" uuid NOT NULL,
  "contact_id" uuid NOT NULL,
  "suggested" jsonb DEFAULT '[]'::jsonb NOT NULL,
  "added" jsonb DEFAULT '[]'::jsonb NOT NULL,
  "created_at" timestamp with time zone NOT NULL,
  CONSTRAINT "ai_tag_suggestions_pk" PRIMARY KEY ("account_id", "inbound_message_id")
);
--> statement-breakpoint
CREATE INDEX IF NOT EXISTS "ai_tag_suggestions_contact_idx" ON "ai_tag_suggestions" ("account_id", "contact_id", "created_at");
--> statement-breakpoint
-- A conversation the AI could not answer waits for a person; a person's reply clears the mark.
ALTER TABLE "conversations" ADD COLUMN IF NOT EXISTS "needs_person" boolean DEFAULT false NOT NULL;
--> statement-breakpoint
ALTER TABLE "conversations" ADD COLUMN IF NOT EXISTS "needs_person_reason" text;
