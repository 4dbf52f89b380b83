-- The newsletter's send jobs are written ahead of the sender, not all at the fan-out: `feed_cursor` is the last
-- contact whose send record has its job. Newsletters already sending or sent have a job for every send record.
ALTER TABLE "newsletters" ADD COLUMN IF NOT EXISTS "feed_cursor" uuid;
--> statement-breakpoint
UPDATE "newsletters" SET "feed_cursor" = 'ffffffff-ffff-ffff-ffff-ffffffffffff' WHERE "status" IN ('sending', 'sent') AND "feed_cursor" IS NULL;
--> statement-breakpoint
-- The sends waiting for sending to be possible again (queued with the reason): the newsletter's progress check finds
-- them without reading every send of a large newsletter. Rows enter it only while they wait.
CREATE INDEX IF NOT EXISTS "template_sends_waiting_idx" ON "template_sends" ("account_id", "origin_id") WHERE "status" = 'queued' AND "reason" IS NOT NULL;
