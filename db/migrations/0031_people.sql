-- People: users who sign in to the web app, their memberships in accounts with a role, server-side sessions and
-- single-use tokens (first-start setup, invitations, password resets), kept only as SHA-256 hashes.
CREATE TABLE IF NOT EXISTS "users" (
  "id" uuid PRIMARY KEY NOT NULL,
  "email" text NOT NULL,
  "name" text DEFAULT '' NOT NULL,
  "password_hash" text,
  "language" text,
  "password_changed_at" timestamp with time zone,
  "created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX IF NOT EXISTS "users_email_uq" ON "users" USING btree (lower("email"));
--> statement-breakpoint
CREATE TABLE IF NOT EXISTS "memberships" (
  "account_id" uuid NOT NULL REFERENCES "accounts"("id") ON DELETE CASCADE,
  "user_id" uuid NOT NULL REFERENCES "users"("id") ON DELETE CASCADE,
  "role" text NOT NULL,
  "status" text NOT NULL,
  "last_active_at" timestamp with time zone,
  "created_at" timestamp with time zone DEFAULT now() NOT NULL,
  CONSTRAINT "memberships_account_id_user_id_pk" PRIMARY KEY ("account_id", "user_id"),
  CONSTRAINT "memberships_role_check" CHECK ("role" IN ('owner', 'admin', 'member', 'viewer')),
  CONSTRAINT "memberships_status_check" CHECK ("status" IN ('invited', 'active'))
);
--> statement-breakpoint
CREATE INDEX IF NOT EXISTS "memberships_user_idx" ON "memberships" USING btree ("user_id");
--> statement-breakpoint
CREATE INDEX IF NOT EXISTS "memberships_created_idx" ON "memberships" USING btree ("account_id", "created_at", "user_id");
--> statement-breakpoint
CREATE TABLE IF NOT EXISTS "sessions" (
  "id" uuid PRIMARY KEY NOT NULL,
  "token_hash" text NOT NULL,
  "user_id" uuid NOT NULL REFERENCES "users"("id") ON DELETE CASCADE,
  "account_id" uuid NOT NULL REFERENCES "accounts"("id") ON DELETE CASCADE,
  "created_at" timestamp with time zone NOT NULL,
  "last_seen_at" timestamp with time zone NOT NULL,
  "expires_at" timestamp with time zone NOT NULL,
  "revoked_at" timestamp with time zone
);
--> statement-breakpoint
CREATE UNIQUE INDEX IF NOT EXISTS "sessions_token_hash_uq" ON "sessions" USING btree ("token_hash");
--> statement-breakpoint
CREATE INDEX IF NOT EXISTS "sessions_user_idx" ON "sessions" USING btree ("user_id");
--> statement-breakpoint
CREATE TABLE IF NOT EXISTS "user_tokens" (
  "token_hash" text PRIMARY KEY NOT NULL,
  "kind" text NOT NULL,
  "account_id" uuid REFERENCES "accounts"("id") ON DELETE CASCADE,
  "user_id" uuid REFERENCES "users"("id") ON DELETE CASCADE,
  "email" text,
  "role" text,
  "expires_at" timestamp with time zone NOT NULL,
  "used_at" timestamp with time zone,
  "created_at" timestamp with time zone NOT NULL,
  CONSTRAINT "user_tokens_kind_check" CHECK ("kind" IN ('setup', 'invite', 'reset'))
);
--> statement-breakpoint
CREATE INDEX IF NOT EXISTS "user_tokens_expires_idx" ON "user_tokens" USING btree ("expires_at");
