CREATE TABLE "template_sends" (
	"account_id" uuid NOT NULL,
	"id" uuid NOT NULL,
	"contact_id" uuid NOT NULL,
	"template_id" uuid NOT NULL,
	"variables" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"status" text NOT NULL,
	"reason" text,
	"error_code" text,
	"attempt_token" uuid,
	"attempts" integer DEFAULT 0 NOT NULL,
	"quota_month" text,
	"message_id" uuid,
	"provider_message_id" text,
	"created_at" timestamp with time zone NOT NULL,
	"updated_at" timestamp with time zone NOT NULL,
	"sending_at" timestamp with time zone,
	"sent_at" timestamp with time zone,
	"delivered_at" timestamp with time zone,
	"read_at" timestamp with time zone,
	"failed_at" timestamp with time zone,
	"skipped_at" timestamp with time zone,
	CONSTRAINT "template_sends_account_id_id_pk" PRIMARY KEY("account_id","id")
);
--> statement-breakpoint
ALTER TABLE "template_sends" ADD CONSTRAINT "template_sends_account_id_accounts_id_fk" FOREIGN KEY ("account_id") REFERENCES "public"."accounts"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "template_sends_contact_idx" ON "template_sends" USING btree ("account_id","contact_id");--> statement-breakpoint
CREATE INDEX "template_sends_message_idx" ON "template_sends" USING btree ("account_id","message_id") WHERE "template_sends"."message_id" IS NOT NULL;