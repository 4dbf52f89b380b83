ALTER TABLE "messages" ADD COLUMN "template" jsonb;
