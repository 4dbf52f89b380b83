CREATE TABLE "channel_connections" (
	"account_id" uuid NOT NULL,
	"channel" text NOT NULL,
	"provider" text NOT NULL,
	"status" text NOT NULL,
	"address" text DEFAULT '' NOT NULL,
	"phone_number_id" text DEFAULT '' NOT NULL,
	"waba_id" text DEFAULT '' NOT NULL,
	"credentials_sealed" text,
	"coexistence" boolean DEFAULT false NOT NULL,
	"messages_per_second" integer DEFAULT 80 NOT NULL,
	"connected_at" timestamp with time zone NOT NULL,
	"disconnected_at" timestamp with time zone,
	CONSTRAINT "channel_connections_account_id_channel_pk" PRIMARY KEY("account_id","channel")
);
--> statement-breakpoint
CREATE TABLE "sandbox_outbox" (
	"account_id" uuid NOT NULL,
	"id" uuid NOT NULL,
	"channel" text NOT NULL,
	"recipient" text NOT NULL,
	"payload" jsonb NOT NULL,
	"created_at" timestamp with time zone NOT NULL,
	CONSTRAINT "sandbox_outbox_account_id_id_pk" PRIMARY KEY("account_id","id")
);
--> statement-breakpoint
CREATE TABLE "sandbox_templates" (
	"account_id" uuid NOT NULL,
	"name" text NOT NULL,
	"language" text NOT NULL,
	"category" text NOT NULL,
	"content" text NOT NULL,
	"status" text NOT NULL,
	"reason" text,
	"created_at" timestamp with time zone NOT NULL,
	CONSTRAINT "sandbox_templates_account_id_name_language_pk" PRIMARY KEY("account_id","name","language")
);
--> statement-breakpoint
CREATE TABLE "conversations" (
	"account_id" uuid NOT NULL,
	"id" uuid NOT NULL,
	"contact_id" uuid NOT NULL,
	"channel" text NOT NULL,
	"created_at" timestamp with time zone NOT NULL,
	"last_message_at" timestamp with time zone NOT NULL,
	"last_message_preview" text DEFAULT '' NOT NULL,
	"last_message_direction" text,
	"last_inbound_at" timestamp with time zone,
	"automated_only" boolean DEFAULT true NOT NULL,
	"unread_count" integer DEFAULT 0 NOT NULL,
	CONSTRAINT "conversations_account_id_id_pk" PRIMARY KEY("account_id","id")
);
--> statement-breakpoint
CREATE TABLE "message_clocks" (
	"account_id" uuid PRIMARY KEY NOT NULL,
	"last_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "messages" (
	"account_id" uuid NOT NULL,
	"id" uuid NOT NULL,
	"conversation_id" uuid NOT NULL,
	"contact_id" uuid NOT NULL,
	"channel" text NOT NULL,
	"direction" text NOT NULL,
	"type" text NOT NULL,
	"text" text DEFAULT '' NOT NULL,
	"media_url" text DEFAULT '' NOT NULL,
	"media_mime" text DEFAULT '' NOT NULL,
	"provider_message_id" text,
	"status" text,
	"error_code" text,
	"automated" boolean DEFAULT false NOT NULL,
	"ai" boolean DEFAULT false NOT NULL,
	"created_at" timestamp with time zone NOT NULL,
	CONSTRAINT "messages_account_id_id_pk" PRIMARY KEY("account_id","id")
);
--> statement-breakpoint
ALTER TABLE "channel_connections" ADD CONSTRAINT "channel_connections_account_id_accounts_id_fk" FOREIGN KEY ("account_id") REFERENCES "public"."accounts"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "sandbox_outbox" ADD CONSTRAINT "sandbox_outbox_account_id_accounts_id_fk" FOREIGN KEY ("account_id") REFERENCES "public"."accounts"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "sandbox_templates" ADD CONSTRAINT "sandbox_templates_account_id_accounts_id_fk" FOREIGN KEY ("account_id") REFERENCES "public"."accounts"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "conversations" ADD CONSTRAINT "conversations_account_id_accounts_id_fk" FOREIGN KEY ("account_id") REFERENCES "public"."accounts"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "message_clocks" ADD CONSTRAINT "message_clocks_account_id_accounts_id_fk" FOREIGN KEY ("account_id") REFERENCES "public"."accounts"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "messages" ADD CONSTRAINT "messages_account_id_accounts_id_fk" FOREIGN KEY ("account_id") REFERENCES "public"."accounts"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "channel_connections_number_idx" ON "channel_connections" USING btree ("phone_number_id");--> statement-breakpoint
CREATE INDEX "sandbox_outbox_created_idx" ON "sandbox_outbox" USING btree ("account_id","created_at");--> statement-breakpoint
CREATE UNIQUE INDEX "conversations_contact_channel_uq" ON "conversations" USING btree ("account_id","contact_id","channel");--> statement-breakpoint
CREATE INDEX "conversations_activity_idx" ON "conversations" USING btree ("account_id","last_message_at","id");--> statement-breakpoint
CREATE UNIQUE INDEX "messages_provider_id_uq" ON "messages" USING btree ("account_id","channel","provider_message_id") WHERE "messages"."provider_message_id" IS NOT NULL;--> statement-breakpoint
CREATE INDEX "messages_direction_created_idx" ON "messages" USING btree ("account_id","direction","created_at","id");--> statement-breakpoint
CREATE INDEX "messages_conversation_created_idx" ON "messages" USING btree ("account_id","conversation_id","created_at","id");--> statement-breakpoint
CREATE INDEX "messages_contact_idx" ON "messages" USING btree ("account_id","contact_id");