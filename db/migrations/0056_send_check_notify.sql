-- The embedded server keeps what POST /messages checks of templates and chat numbers in memory
-- (src/platform/db/notified-cache.ts); any change to them, from whatever wrote it, notifies herold_send_checks at
-- commit and the cache is dropped.
CREATE OR REPLACE FUNCTION "herold_send_checks_changed"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('herold_send_checks', TG_TABLE_NAME);
  RETURN NULL;
END
$$;
--> statement-breakpoint
DROP TRIGGER IF EXISTS "templates_send_checks_changed" ON "templates";
--> statement-breakpoint
CREATE TRIGGER "templates_send_checks_changed" AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON "templates"
  FOR EACH STATEMENT EXECUTE FUNCTION "herold_send_checks_changed"();
--> statement-breakpoint
DROP TRIGGER IF EXISTS "channel_connections_send_checks_changed" ON "channel_connections";
--> statement-breakpoint
CREATE TRIGGER "channel_connections_send_checks_changed" AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE
  ON "channel_connections" FOR EACH STATEMENT EXECUTE FUNCTION "herold_send_checks_changed"();
