-- Newsletter CTA click tracking: a short link written for each recipient at the fan-out names its newsletter, so
-- clicks are counted per newsletter and contact.
ALTER TABLE "tracked_links" ADD COLUMN IF NOT EXISTS "newsletter_id" uuid;
--> statement-breakpoint
CREATE INDEX IF NOT EXISTS "tracked_links_newsletter_idx" ON "tracked_links" ("account_id", "newsletter_id")
  WHERE "newsletter_id" IS NOT NULL;
--> statement-breakpoint
-- How the newsletter's CTA button was made when it was scheduled: 'tracked' (a per-recipient short link),
-- 'public_url_not_https' or 'content_numbered_variables' (the plain CTA address, clicks not counted); null without one.
ALTER TABLE "newsletters" ADD COLUMN IF NOT EXISTS "cta_tracking" text;
--> statement-breakpoint
-- A header image: {media_id?, url, mime_type?}
ALTER TABLE "newsletters" ADD COLUMN IF NOT EXISTS "header_media" jsonb;
--> statement-breakpoint
-- The last failed call to the AI endpoint for the account (shown in GET /settings/ai).
ALTER TABLE "ai_settings" ADD COLUMN IF NOT EXISTS "last_failure_at" timestamp with time zone;
--> statement-breakpoint
ALTER TABLE "ai_settings" ADD COLUMN IF NOT EXISTS "last_failure_reason" text;
