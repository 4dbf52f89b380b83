-- Two-step confirmation of the tool server (src/mcp/confirmations.ts): a tool that sends, schedules, submits or
-- deletes first answers a preview and a confirm_token; the second call with the same arguments and the token runs.
-- Only the token's SHA-256 hash is kept. A token is bound to its account, credential, tool and argument hash,
-- expires after 10 minutes and is used once (used_at).
CREATE TABLE IF NOT EXISTS "tool_confirmations" (
  "account_id" uuid NOT NULL REFERENCES "accounts"("id") ON DELETE CASCADE,
  "id" uuid NOT NULL,
  "token_hash" text NOT NULL,
  "credential_id" uuid NOT NULL,
  "tool" text NOT NULL,
  "arguments_hash" text NOT NULL,
  "expires_at" timestamp with time zone NOT NULL,
  "used_at" timestamp with time zone,
  "created_at" timestamp with time zone NOT NULL DEFAULT now(),
  PRIMARY KEY ("account_id", "id")
);
--> statement-breakpoint
CREATE UNIQUE INDEX IF NOT EXISTS "tool_confirmations_token_uq" ON "tool_confirmations" ("token_hash");
--> statement-breakpoint
CREATE INDEX IF NOT EXISTS "tool_confirmations_expires_idx" ON "tool_confirmations" ("expires_at");
--> statement-breakpoint
-- OAuth 2.1 for assistants (src/mcp/oauth.ts): clients registered dynamically (RFC 7591, public clients with PKCE),
-- grants (one per approval: account, client, scopes, resource), single-use authorization codes, rotating refresh
-- tokens (a reused one revokes its grant), all secrets stored as SHA-256 hashes.
CREATE TABLE IF NOT EXISTS "oauth_clients" (
  "client_id" text PRIMARY KEY,
  "client_name" text NOT NULL,
  "redirect_uris" text[] NOT NULL,
  "created_at" timestamp with time zone NOT NULL DEFAULT now()
);
--> statement-breakpoint
CREATE TABLE IF NOT EXISTS "oauth_grants" (
  "account_id" uuid NOT NULL REFERENCES "accounts"("id") ON DELETE CASCADE,
  "id" uuid NOT NULL,
  "client_id" text NOT NULL REFERENCES "oauth_clients"("client_id") ON DELETE CASCADE,
  "scopes" text[] NOT NULL,
  "resource" text NOT NULL,
  "revoked_at" timestamp with time zone,
  "created_at" timestamp with time zone NOT NULL DEFAULT now(),
  PRIMARY KEY ("account_id", "id")
);
--> statement-breakpoint
CREATE UNIQUE INDEX IF NOT EXISTS "oauth_grants_id_uq" ON "oauth_grants" ("id");
--> statement-breakpoint
CREATE TABLE IF NOT EXISTS "oauth_codes" (
  "code_hash" text PRIMARY KEY,
  "account_id" uuid NOT NULL REFERENCES "accounts"("id") ON DELETE CASCADE,
  "grant_id" uuid NOT NULL,
  "client_id" text NOT NULL,
  "redirect_uri" text NOT NULL,
  "code_challenge" text NOT NULL,
  "expires_at" timestamp with time zone NOT NULL,
  "used_at" timestamp with time zone
);
--> statement-breakpoint
CREATE TABLE IF NOT EXISTS "oauth_refresh_tokens" (
  "token_hash" text PRIMARY KEY,
  "account_id" uuid NOT NULL REFERENCES "accounts"("id") ON DELETE CASCADE,
  "grant_id" uuid NOT NULL,
  "expires_at" timestamp with time zone NOT NULL,
  "used_at" timestamp with time zone,
  "created_at" timestamp with time zone NOT NULL DEFAULT now()
);
--> statement-breakpoint
CREATE INDEX IF NOT EXISTS "oauth_refresh_tokens_grant_idx" ON "oauth_refresh_tokens" ("account_id", "grant_id");
--> statement-breakpoint
ALTER TABLE "oauth_access_tokens" ADD COLUMN IF NOT EXISTS "grant_id" uuid;
