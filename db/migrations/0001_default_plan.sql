-- The plan every account gets unless another is named: generous enough for a real business.
INSERT INTO "plans" ("name", "contacts_limit", "messages_per_month", "webhooks_limit")
VALUES ('default', 1000000, 100000, 10)
ON CONFLICT ("name") DO NOTHING;
