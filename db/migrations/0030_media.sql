-- The media library (docs/media.md): files uploaded for templates, newsletters, follow-ups and the landing page.
-- The bytes live in the storage (data directory or object storage) under storage_key; this row describes them.
CREATE TABLE IF NOT EXISTS "media" (
  "account_id" uuid NOT NULL REFERENCES "accounts"("id") ON DELETE CASCADE,
  "id" uuid NOT NULL,
  "kind" text NOT NULL,
  "usage" text NOT NULL,
  "mime" text NOT NULL,
  "size" bigint NOT NULL,
  "width" integer,
  "height" integer,
  "filename" text,
  "source" text NOT NULL,
  "storage_key" text NOT NULL,
  "created_at" timestamp with time zone NOT NULL,
  CONSTRAINT "media_account_id_id_pk" PRIMARY KEY ("account_id", "id")
);
--> statement-breakpoint
CREATE INDEX IF NOT EXISTS "media_created_idx" ON "media" USING btree ("account_id", "created_at" DESC, "id" DESC);
--> statement-breakpoint
CREATE INDEX IF NOT EXISTS "media_kind_created_idx" ON "media" USING btree ("account_id", "kind", "created_at" DESC, "id" DESC);
