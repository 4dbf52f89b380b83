-- The frequency cap and quiet hours (issue 50): per account at most cap_messages marketing messages per contact in a
-- rolling window of cap_window_hours, and a nightly window (quiet_from–quiet_to, local wall-clock time of the
-- contact) in which marketing sends wait. An account without a row has the defaults of a new account (the cap on,
-- 1 per 16 hours; quiet hours off); the accounts that exist now get a row with both off, so nothing they send
-- changes until they switch it on.
CREATE TABLE IF NOT EXISTS "sending_settings" (
  "account_id" uuid PRIMARY KEY NOT NULL REFERENCES "accounts"("id") ON DELETE CASCADE,
  "cap_enabled" boolean NOT NULL DEFAULT true,
  "cap_messages" integer NOT NULL DEFAULT 1,
  "cap_window_hours" integer NOT NULL DEFAULT 16,
  "quiet_enabled" boolean NOT NULL DEFAULT false,
  "quiet_from" text NOT NULL DEFAULT '20:00',
  "quiet_to" text NOT NULL DEFAULT '08:00',
  "updated_at" timestamp with time zone NOT NULL DEFAULT now(),
  CONSTRAINT "sending_settings_cap_ck" CHECK ("cap_messages" BETWEEN 1 AND 100 AND "cap_window_hours" BETWEEN 1 AND 720)
);
--> statement-breakpoint
INSERT INTO "sending_settings" ("account_id", "cap_enabled", "quiet_enabled")
  SELECT "id", false, false FROM "accounts"
  ON CONFLICT ("account_id") DO NOTHING;
