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
