-- Contact search (GET /v1/contacts?q=): one trigram GIN index over name, email and phone, led by account_id
-- (btree_gin), so ILIKE '%term%' never scans an account's whole table and another account's matches are never read.
-- The expression must stay identical to SEARCH_TEXT in src/modules/contacts/contacts.repository.ts.
CREATE EXTENSION IF NOT EXISTS pg_trgm;
--> statement-breakpoint
CREATE EXTENSION IF NOT EXISTS btree_gin;
--> statement-breakpoint
CREATE INDEX IF NOT EXISTS "contacts_search_trgm_idx" ON "contacts" USING gin ("account_id", ("name" || E'\n' || "email" || E'\n' || "phone") gin_trgm_ops);
