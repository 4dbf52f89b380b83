CREATE TABLE "consent_records" (
	"account_id" uuid NOT NULL,
	"id" uuid NOT NULL,
	"contact_id" uuid,
	"channel" text NOT NULL,
	"from_state" text NOT NULL,
	"to_state" text NOT NULL,
	"source" text NOT NULL,
	"address" text,
	"evidence" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"recorded_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "consent_records_account_id_id_pk" PRIMARY KEY("account_id","id")
);
--> statement-breakpoint
CREATE TABLE "contact_counts" (
	"account_id" uuid PRIMARY KEY NOT NULL,
	"count" integer DEFAULT 0 NOT NULL
);
--> statement-breakpoint
CREATE TABLE "contact_tags" (
	"account_id" uuid NOT NULL,
	"contact_id" uuid NOT NULL,
	"name" text NOT NULL,
	"origin" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "contact_tags_account_id_contact_id_name_origin_pk" PRIMARY KEY("account_id","contact_id","name","origin")
);
--> statement-breakpoint
CREATE TABLE "contacts" (
	"account_id" uuid NOT NULL,
	"id" uuid NOT NULL,
	"name" text DEFAULT '' NOT NULL,
	"email" text DEFAULT '' NOT NULL,
	"phone" text DEFAULT '' NOT NULL,
	"optin_chat" text DEFAULT 'none' NOT NULL,
	"optin_email" text DEFAULT 'none' NOT NULL,
	"language" text DEFAULT '' NOT NULL,
	"source" text DEFAULT 'api' NOT NULL,
	"acquisition" text DEFAULT 'marketing' NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "contacts_account_id_id_pk" PRIMARY KEY("account_id","id")
);
--> statement-breakpoint
ALTER TABLE "consent_records" ADD CONSTRAINT "consent_records_account_id_accounts_id_fk" FOREIGN KEY ("account_id") REFERENCES "public"."accounts"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "contact_counts" ADD CONSTRAINT "contact_counts_account_id_accounts_id_fk" FOREIGN KEY ("account_id") REFERENCES "public"."accounts"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "contact_tags" ADD CONSTRAINT "contact_tags_account_id_accounts_id_fk" FOREIGN KEY ("account_id") REFERENCES "public"."accounts"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "contact_tags" ADD CONSTRAINT "contact_tags_account_id_contact_id_contacts_account_id_id_fk" FOREIGN KEY ("account_id","contact_id") REFERENCES "public"."contacts"("account_id","id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "contacts" ADD CONSTRAINT "contacts_account_id_accounts_id_fk" FOREIGN KEY ("account_id") REFERENCES "public"."accounts"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "consent_records_contact_idx" ON "consent_records" USING btree ("account_id","contact_id","recorded_at");--> statement-breakpoint
CREATE INDEX "contact_tags_name_idx" ON "contact_tags" USING btree ("account_id","name");--> statement-breakpoint
CREATE INDEX "contacts_created_idx" ON "contacts" USING btree ("account_id","created_at","id");--> statement-breakpoint
CREATE UNIQUE INDEX "contacts_email_uq" ON "contacts" USING btree ("account_id","email") WHERE "contacts"."email" <> '';--> statement-breakpoint
CREATE UNIQUE INDEX "contacts_phone_uq" ON "contacts" USING btree ("account_id","phone") WHERE "contacts"."phone" <> '';