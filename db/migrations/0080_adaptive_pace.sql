-- Adaptive pace (issue 50): a throughput refusal (130429) lowers a lane's pace (job_paces.per_second, what every
-- worker's claim reads) for every process; it recovers step by step while no refusal comes. While lowered, the row
-- keeps the pace it returns to (full_per_second), why and since when it is lower, the last refusal and the last step.
-- All of them are null while the lane runs at its full pace.
ALTER TABLE "job_paces" ADD COLUMN IF NOT EXISTS "full_per_second" integer;
--> statement-breakpoint
ALTER TABLE "job_paces" ADD COLUMN IF NOT EXISTS "reduced_reason" text;
--> statement-breakpoint
ALTER TABLE "job_paces" ADD COLUMN IF NOT EXISTS "reduced_at" timestamp with time zone;
--> statement-breakpoint
ALTER TABLE "job_paces" ADD COLUMN IF NOT EXISTS "last_refusal_at" timestamp with time zone;
--> statement-breakpoint
ALTER TABLE "job_paces" ADD COLUMN IF NOT EXISTS "changed_at" timestamp with time zone;
--> statement-breakpoint
-- The sandbox answers 130429 to messages of the number beyond this many in one second (tests, the benchmark).
ALTER TABLE "channel_connections" ADD COLUMN IF NOT EXISTS "sandbox_refuse_above" integer;
--> statement-breakpoint
-- the lowered lanes, for herold status and the metrics (a handful among every account's lane)
CREATE INDEX IF NOT EXISTS "job_paces_lowered_idx" ON "job_paces" USING btree ("reduced_at", "account_id", "lane") WHERE "full_per_second" IS NOT NULL;
