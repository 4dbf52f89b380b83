-- Rate per plan: requests per minute per API key (the spec's 120 for the default plan).
ALTER TABLE "plans" ADD COLUMN IF NOT EXISTS "requests_per_minute" integer NOT NULL DEFAULT 120;
--> statement-breakpoint
-- Every process caches credentials (src/platform/auth/credential-cache.ts). Any change to what a credential
-- resolves to (a key created or revoked, an account blocked, its plan or pause changed, a plan's limits) notifies
-- herold_credentials at commit, from whatever wrote it (the API, the CLI, an operator's SQL), and every
-- process drops its cache.
CREATE OR REPLACE FUNCTION "herold_credentials_changed"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('herold_credentials', TG_TABLE_NAME);
  RETURN NULL;
END
$$;
--> statement-breakpoint
DROP TRIGGER IF EXISTS "accounts_credentials_changed" ON "accounts";
--> statement-breakpoint
CREATE TRIGGER "accounts_credentials_changed" AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON "accounts"
  FOR EACH STATEMENT EXECUTE FUNCTION "herold_credentials_changed"();
--> statement-breakpoint
DROP TRIGGER IF EXISTS "api_keys_credentials_changed" ON "api_keys";
--> statement-breakpoint
CREATE TRIGGER "api_keys_credentials_changed" AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON "api_keys"
  FOR EACH STATEMENT EXECUTE FUNCTION "herold_credentials_changed"();
--> statement-breakpoint
DROP TRIGGER IF EXISTS "plans_credentials_changed" ON "plans";
--> statement-breakpoint
CREATE TRIGGER "plans_credentials_changed" AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON "plans"
  FOR EACH STATEMENT EXECUTE FUNCTION "herold_credentials_changed"();
