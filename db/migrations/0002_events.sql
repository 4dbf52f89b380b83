CREATE TABLE "events" (
	"account_id" uuid NOT NULL,
	"id" uuid NOT NULL,
	"name" text NOT NULL,
	"contact_id" uuid,
	"data" jsonb NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "events_account_id_id_pk" PRIMARY KEY("account_id","id")
);
--> statement-breakpoint
ALTER TABLE "events" ADD CONSTRAINT "events_account_id_accounts_id_fk" FOREIGN KEY ("account_id") REFERENCES "public"."accounts"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "events_contact_idx" ON "events" USING btree ("account_id","contact_id");--> statement-breakpoint
CREATE INDEX "events_created_idx" ON "events" USING btree ("account_id","created_at");