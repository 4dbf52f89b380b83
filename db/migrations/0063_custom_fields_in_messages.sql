-- Custom fields in messages (issue 33). A skipped send names what it lacked (the custom field a template needs and
-- the contact has no value for) in reason_detail beside its reason. The embedded server keeps an account's field
-- definitions in memory for POST /messages like the templates of 0056: a change notifies herold_send_checks.
ALTER TABLE "template_sends" ADD COLUMN IF NOT EXISTS "reason_detail" text;
--> statement-breakpoint
DROP TRIGGER IF EXISTS "contact_fields_send_checks_changed" ON "contact_fields";
--> statement-breakpoint
CREATE TRIGGER "contact_fields_send_checks_changed" AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON "contact_fields"
  FOR EACH STATEMENT EXECUTE FUNCTION "herold_send_checks_changed"();
