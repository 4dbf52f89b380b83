ALTER TABLE "consent_settings" ADD COLUMN "landing_logo" jsonb;
