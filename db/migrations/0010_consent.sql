CREATE TABLE "chat_optin_requests" (
	"account_id" uuid NOT NULL,
	"contact_id" uuid NOT NULL,
	"state" text NOT NULL,
	"inbound_message_id" uuid,
	"template_id" uuid,
	"language" text,
	"button_text" text,
	"message_id" uuid,
	"reason" text,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "chat_optin_requests_account_id_contact_id_pk" PRIMARY KEY("account_id","contact_id")
);
--> statement-breakpoint
CREATE TABLE "consent_settings" (
	"account_id" uuid PRIMARY KEY NOT NULL,
	"start_keywords" jsonb,
	"stop_keywords" jsonb,
	"stop_confirmation" text,
	"landing_consent_text" text,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "email_optin_tokens" (
	"account_id" uuid NOT NULL,
	"id" uuid NOT NULL,
	"contact_id" uuid NOT NULL,
	"token_hash" text NOT NULL,
	"email" text NOT NULL,
	"expires_at" timestamp with time zone NOT NULL,
	"used_at" timestamp with time zone,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "email_optin_tokens_account_id_id_pk" PRIMARY KEY("account_id","id")
);
--> statement-breakpoint
ALTER TABLE "chat_optin_requests" ADD CONSTRAINT "chat_optin_requests_account_id_contact_id_contacts_account_id_id_fk" FOREIGN KEY ("account_id","contact_id") REFERENCES "public"."contacts"("account_id","id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "consent_settings" ADD CONSTRAINT "consent_settings_account_id_accounts_id_fk" FOREIGN KEY ("account_id") REFERENCES "public"."accounts"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "email_optin_tokens" ADD CONSTRAINT "email_optin_tokens_account_id_contact_id_contacts_account_id_id_fk" FOREIGN KEY ("account_id","contact_id") REFERENCES "public"."contacts"("account_id","id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "email_optin_tokens_hash_uq" ON "email_optin_tokens" USING btree ("token_hash");