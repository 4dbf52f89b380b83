-- Internal notes of the team on a conversation (issue 48): never sent to the customer, never in /v1's message lists;
-- the members their @mentions named, and which of those marked them read. They go with their conversation.
CREATE TABLE IF NOT EXISTS "conversation_notes" (
  "account_id" uuid NOT NULL REFERENCES "accounts"("id") ON DELETE CASCADE,
  "id" uuid NOT NULL,
  "conversation_id" uuid NOT NULL,
  "author_id" uuid,
  "body" text NOT NULL,
  "mentions" uuid[] NOT NULL DEFAULT '{}'::uuid[],
  "read_by" uuid[] NOT NULL DEFAULT '{}'::uuid[],
  "created_at" timestamp with time zone NOT NULL,
  CONSTRAINT "conversation_notes_account_id_id_pk" PRIMARY KEY ("account_id", "id"),
  CONSTRAINT "conversation_notes_conversation_fk" FOREIGN KEY ("account_id", "conversation_id")
    REFERENCES "conversations"("account_id", "id") ON DELETE CASCADE,
  CONSTRAINT "conversation_notes_body_ck" CHECK (char_length("body") BETWEEN 1 AND 4000)
);
--> statement-breakpoint
CREATE INDEX IF NOT EXISTS "conversation_notes_conversation_idx"
  ON "conversation_notes" USING btree ("account_id", "conversation_id", "created_at", "id");
--> statement-breakpoint
CREATE INDEX IF NOT EXISTS "conversation_notes_mentions_idx" ON "conversation_notes" USING gin ("mentions");
