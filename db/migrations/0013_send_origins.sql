ALTER TABLE "template_sends" ADD COLUMN "origin" text DEFAULT 'api' NOT NULL;--> statement-breakpoint
ALTER TABLE "template_sends" ADD COLUMN "origin_id" uuid;--> statement-breakpoint
CREATE INDEX "template_sends_origin_idx" ON "template_sends" USING btree ("account_id","origin_id","status") WHERE "template_sends"."origin_id" IS NOT NULL;
