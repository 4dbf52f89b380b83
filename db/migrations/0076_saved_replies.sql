-- Saved replies (issue 48): per account a short code the reply box finds it by (`/danke`, unique per account), a
-- title, a text whose {{name}} variables are filled from the contact as a template's are, and optionally a file of
-- the media library.
CREATE TABLE IF NOT EXISTS "saved_replies" (
  "account_id" uuid NOT NULL REFERENCES "accounts"("id") ON DELETE CASCADE,
  "id" uuid NOT NULL,
  "code" text NOT NULL,
  "title" text NOT NULL,
  "text" text NOT NULL,
  "media_id" uuid,
  "created_at" timestamp with time zone NOT NULL,
  "updated_at" timestamp with time zone NOT NULL,
  CONSTRAINT "saved_replies_account_id_id_pk" PRIMARY KEY ("account_id", "id")
);
--> statement-breakpoint
CREATE UNIQUE INDEX IF NOT EXISTS "saved_replies_code_uq" ON "saved_replies" USING btree ("account_id", "code");
