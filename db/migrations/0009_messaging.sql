CREATE TABLE "link_clicks" (
	"account_id" uuid NOT NULL,
	"link_id" text NOT NULL,
	"contact_id" uuid NOT NULL,
	"clicked_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "message_quota" (
	"account_id" uuid NOT NULL,
	"month" text NOT NULL,
	"used" integer NOT NULL,
	CONSTRAINT "message_quota_account_id_month_pk" PRIMARY KEY("account_id","month")
);
--> statement-breakpoint
CREATE TABLE "tracked_links" (
	"account_id" uuid NOT NULL,
	"id" text NOT NULL,
	"contact_id" uuid NOT NULL,
	"url" text NOT NULL,
	"created_at" timestamp with time zone NOT NULL,
	CONSTRAINT "tracked_links_account_id_id_pk" PRIMARY KEY("account_id","id")
);
--> statement-breakpoint
ALTER TABLE "link_clicks" ADD CONSTRAINT "link_clicks_account_id_accounts_id_fk" FOREIGN KEY ("account_id") REFERENCES "public"."accounts"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "link_clicks" ADD CONSTRAINT "link_clicks_account_id_link_id_tracked_links_account_id_id_fk" FOREIGN KEY ("account_id","link_id") REFERENCES "public"."tracked_links"("account_id","id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "message_quota" ADD CONSTRAINT "message_quota_account_id_accounts_id_fk" FOREIGN KEY ("account_id") REFERENCES "public"."accounts"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "tracked_links" ADD CONSTRAINT "tracked_links_account_id_accounts_id_fk" FOREIGN KEY ("account_id") REFERENCES "public"."accounts"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "link_clicks_link_idx" ON "link_clicks" USING btree ("account_id","link_id");--> statement-breakpoint
CREATE UNIQUE INDEX "tracked_links_id_uq" ON "tracked_links" USING btree ("id");