CREATE TABLE "automations" (
	"account_id" uuid NOT NULL,
	"id" uuid NOT NULL,
	"name" text NOT NULL,
	"status" text NOT NULL,
	"intent" text NOT NULL,
	"trigger" jsonb NOT NULL,
	"trigger_kind" text NOT NULL,
	"steps" jsonb NOT NULL,
	"notice" text,
	"signing_secret_sealed" text NOT NULL,
	"created_at" timestamp with time zone NOT NULL,
	"updated_at" timestamp with time zone NOT NULL,
	CONSTRAINT "automations_account_id_id_pk" PRIMARY KEY("account_id","id")
);
--> statement-breakpoint
ALTER TABLE "automations" ADD CONSTRAINT "automations_account_id_accounts_id_fk" FOREIGN KEY ("account_id") REFERENCES "public"."accounts"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "automations_created_idx" ON "automations" USING btree ("account_id","created_at" DESC,"id" DESC);--> statement-breakpoint
CREATE INDEX "automations_trigger_idx" ON "automations" USING btree ("account_id","trigger_kind") WHERE "automations"."status" = 'active';--> statement-breakpoint
CREATE TABLE "automation_sources" (
	"account_id" uuid NOT NULL,
	"id" uuid NOT NULL,
	"automation_id" uuid NOT NULL,
	"kind" text NOT NULL,
	"secret_sealed" text,
	"feed_url" text,
	"first_event_at" timestamp with time zone,
	"last_event_at" timestamp with time zone,
	"event_count" integer DEFAULT 0 NOT NULL,
	"last_error" text,
	"last_error_at" timestamp with time zone,
	"last_polled_at" timestamp with time zone,
	"created_at" timestamp with time zone NOT NULL,
	CONSTRAINT "automation_sources_account_id_id_pk" PRIMARY KEY("account_id","id")
);
--> statement-breakpoint
ALTER TABLE "automation_sources" ADD CONSTRAINT "automation_sources_automation_fk" FOREIGN KEY ("account_id","automation_id") REFERENCES "public"."automations"("account_id","id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "automation_sources_id_uq" ON "automation_sources" USING btree ("id");--> statement-breakpoint
CREATE UNIQUE INDEX "automation_sources_automation_uq" ON "automation_sources" USING btree ("account_id","automation_id");--> statement-breakpoint
CREATE TABLE "automation_calendar_events" (
	"account_id" uuid NOT NULL,
	"source_id" uuid NOT NULL,
	"uid" text NOT NULL,
	"starts_at" timestamp with time zone NOT NULL,
	"contact_id" uuid,
	"run_id" uuid,
	CONSTRAINT "automation_calendar_events_pk" PRIMARY KEY("account_id","source_id","uid")
);
--> statement-breakpoint
ALTER TABLE "automation_calendar_events" ADD CONSTRAINT "automation_calendar_events_source_fk" FOREIGN KEY ("account_id","source_id") REFERENCES "public"."automation_sources"("account_id","id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE TABLE "automation_runs" (
	"account_id" uuid NOT NULL,
	"id" uuid NOT NULL,
	"automation_id" uuid NOT NULL,
	"contact_id" uuid,
	"state" text NOT NULL,
	"source" text NOT NULL,
	"step_index" integer DEFAULT 0 NOT NULL,
	"steps" jsonb NOT NULL,
	"data" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"log" jsonb DEFAULT '[]'::jsonb NOT NULL,
	"wait_until" timestamp with time zone,
	"wait_reason" text,
	"reason" text,
	"created_at" timestamp with time zone NOT NULL,
	"updated_at" timestamp with time zone NOT NULL,
	"finished_at" timestamp with time zone,
	CONSTRAINT "automation_runs_account_id_id_pk" PRIMARY KEY("account_id","id")
);
--> statement-breakpoint
ALTER TABLE "automation_runs" ADD CONSTRAINT "automation_runs_automation_fk" FOREIGN KEY ("account_id","automation_id") REFERENCES "public"."automations"("account_id","id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "automation_runs_automation_idx" ON "automation_runs" USING btree ("account_id","automation_id","created_at" DESC,"id" DESC);--> statement-breakpoint
CREATE INDEX "automation_runs_contact_idx" ON "automation_runs" USING btree ("account_id","contact_id") WHERE "automation_runs"."contact_id" IS NOT NULL;--> statement-breakpoint
CREATE INDEX "automation_runs_paused_idx" ON "automation_runs" USING btree ("account_id","automation_id") WHERE "automation_runs"."wait_reason" = 'automation_paused';
