CREATE TABLE "templates" (
	"account_id" uuid NOT NULL,
	"id" uuid NOT NULL,
	"name" text NOT NULL,
	"provider_name" text NOT NULL,
	"content" text NOT NULL,
	"channel" text DEFAULT 'chat' NOT NULL,
	"subject" text,
	"purpose" text DEFAULT 'marketing' NOT NULL,
	"language" text NOT NULL,
	"buttons" jsonb DEFAULT '[]'::jsonb NOT NULL,
	"header_media" jsonb,
	"state" text DEFAULT 'draft' NOT NULL,
	"provider_status" text,
	"provider_template_id" text,
	"rejection_reason" text,
	"system" boolean DEFAULT false NOT NULL,
	"submitted_at" timestamp with time zone,
	"provider_status_at" timestamp with time zone,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "templates_account_id_id_pk" PRIMARY KEY("account_id","id")
);
--> statement-breakpoint
ALTER TABLE "templates" ADD CONSTRAINT "templates_account_id_accounts_id_fk" FOREIGN KEY ("account_id") REFERENCES "public"."accounts"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "templates_created_idx" ON "templates" USING btree ("account_id","created_at","id");--> statement-breakpoint
CREATE INDEX "templates_provider_name_idx" ON "templates" USING btree ("account_id","provider_name","language");