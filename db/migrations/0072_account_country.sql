-- An account's country (ISO 3166-1 alpha-2): imports and the web app read national phone numbers with it. NULL: the
-- country of the account's time zone (Europe/Berlin is DE).
ALTER TABLE "accounts" ADD COLUMN "country" text;--> statement-breakpoint
ALTER TABLE "accounts" ADD CONSTRAINT "accounts_country_format" CHECK ("country" IS NULL OR "country" ~ '^[A-Z]{2}$');
