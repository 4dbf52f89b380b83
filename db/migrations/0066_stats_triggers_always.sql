-- The contact statistics' statement triggers fire in every session_replication_role (ENABLE ALWAYS): the contact import
-- inserts its batches as `replica` to skip the per-row foreign key checks that its statement satisfies by construction
-- (contacts.repository.ts, importMayLoadUnchecked), and its new contacts must still be counted. Since these triggers
-- came (0029) the import found a trigger of its own on contacts and checked every row again.
ALTER TABLE "contacts" ENABLE ALWAYS TRIGGER "contacts_stats_insert";
--> statement-breakpoint
ALTER TABLE "contacts" ENABLE ALWAYS TRIGGER "contacts_stats_update";
--> statement-breakpoint
ALTER TABLE "contacts" ENABLE ALWAYS TRIGGER "contacts_stats_delete";
