CREATE TABLE "message_quota" (
	"account_id" uuid NOT NULL,
	"month" text NOT NULL,
	"used" integer NOT NULL,
	CONSTRAINT "message_quota_account_id_month_pk" PRIMARY KEY("account_id","month")
);
--> statement-breakpoint
ALTER TABLE "message_quota" ADD CONSTRAINT "message_quota_account_id_accounts_id_fk" FOREIGN KEY ("account_id") REFERENCES "public"."accounts"("id") ON DELETE cascade ON UPDATE no action;