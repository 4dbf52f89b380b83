-- Statistics from daily counters, never from counting whole tables per request (docs/stats.md).
-- Writers pay one small insert per statement: statement-level triggers with transition tables append the
-- statement's counts to stats_deltas (insert only, so concurrent writers never wait on a counter row); the stats
-- worker moves them into stats_daily (per day in the account's timezone) and stats_totals (current states).
-- A read adds the deltas not yet rolled up, so the answer is exact at any moment.
CREATE TABLE IF NOT EXISTS "stats_daily" (
  "account_id" uuid NOT NULL REFERENCES "accounts"("id") ON DELETE CASCADE,
  "day" date NOT NULL,
  "metric" text NOT NULL,
  "n" bigint NOT NULL,
  CONSTRAINT "stats_daily_pk" PRIMARY KEY ("account_id", "day", "metric")
);
--> statement-breakpoint
CREATE TABLE IF NOT EXISTS "stats_totals" (
  "account_id" uuid NOT NULL REFERENCES "accounts"("id") ON DELETE CASCADE,
  "metric" text NOT NULL,
  "n" bigint NOT NULL,
  CONSTRAINT "stats_totals_pk" PRIMARY KEY ("account_id", "metric")
);
--> statement-breakpoint
-- No index: the table holds seconds of changes (the rollup empties it), and each index would cost every writer.
-- day NULL: a change of a current total (contacts per opt-in state), not a daily count. No foreign key: a cascade
-- that deletes an account's contacts must not fail here (the triggers join accounts, so it adds nothing).
CREATE TABLE IF NOT EXISTS "stats_deltas" (
  "account_id" uuid NOT NULL,
  "day" date,
  "metric" text NOT NULL,
  "n" bigint NOT NULL
);
--> statement-breakpoint
-- Generic: one daily count per inserted row, named by TG_ARGV[0], dated by the timestamp column TG_ARGV[1].
-- For tables off the hot paths (link clicks, automation runs; follow-up runs add one line each).
CREATE OR REPLACE FUNCTION "herold_stats_count_rows"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  EXECUTE format(
    'INSERT INTO stats_deltas (account_id, day, metric, n)
     SELECT r.account_id, (r.%I AT TIME ZONE a.timezone)::date, %L, count(*)
     FROM stats_new_rows r JOIN accounts a ON a.id = r.account_id GROUP BY 1, 2',
    TG_ARGV[1], TG_ARGV[0]);
  RETURN NULL;
END
$$;
--> statement-breakpoint
CREATE OR REPLACE FUNCTION "herold_stats_messages"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO stats_deltas (account_id, day, metric, n)
  SELECT r.account_id, (r.created_at AT TIME ZONE a.timezone)::date, m.metric, count(*)
  FROM stats_new_rows r JOIN accounts a ON a.id = r.account_id
  CROSS JOIN LATERAL (VALUES
    (CASE WHEN r.direction = 'inbound' THEN 'messages.in' ELSE 'messages.out' END),
    (CASE WHEN r.ai AND r.direction = 'outbound' THEN 'ai.replies' END)
  ) AS m(metric)
  WHERE m.metric IS NOT NULL
  GROUP BY 1, 2, 3;
  RETURN NULL;
END
$$;
--> statement-breakpoint
-- Template sends per status reached, per day: an insert counts its first status, an update the new status.
-- `sending` is a passing state and not counted. Newsletter sends apart from the others.
CREATE OR REPLACE FUNCTION "herold_stats_sends"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    INSERT INTO stats_deltas (account_id, day, metric, n)
    SELECT r.account_id, (r.created_at AT TIME ZONE a.timezone)::date,
      CASE WHEN r.origin = 'newsletter' THEN 'sends.newsletter.' ELSE 'sends.template.' END || r.status, count(*)
    FROM stats_new_rows r JOIN accounts a ON a.id = r.account_id
    WHERE r.status <> 'sending'
    GROUP BY 1, 2, 3;
  ELSE
    INSERT INTO stats_deltas (account_id, day, metric, n)
    SELECT n.account_id, (n.updated_at AT TIME ZONE a.timezone)::date,
      CASE WHEN n.origin = 'newsletter' THEN 'sends.newsletter.' ELSE 'sends.template.' END || n.status, count(*)
    FROM stats_new_rows n JOIN stats_old_rows o ON o.account_id = n.account_id AND o.id = n.id
    JOIN accounts a ON a.id = n.account_id
    WHERE n.status IS DISTINCT FROM o.status AND n.status <> 'sending'
    GROUP BY 1, 2, 3;
  END IF;
  RETURN NULL;
END
$$;
--> statement-breakpoint
-- Contacts: new ones per day, and the current totals (all, per opt-in state of each channel) as changes.
CREATE OR REPLACE FUNCTION "herold_stats_contacts"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    INSERT INTO stats_deltas (account_id, day, metric, n)
    SELECT r.account_id, d.day, d.metric, count(*)
    FROM stats_new_rows r JOIN accounts a ON a.id = r.account_id
    CROSS JOIN LATERAL (VALUES
      ((r.created_at AT TIME ZONE a.timezone)::date, 'contacts.new'),
      (NULL::date, 'contacts.total'),
      (NULL::date, 'contacts.optin_chat.' || r.optin_chat),
      (NULL::date, 'contacts.optin_email.' || r.optin_email)
    ) AS d(day, metric)
    GROUP BY 1, 2, 3;
  ELSIF TG_OP = 'DELETE' THEN
    INSERT INTO stats_deltas (account_id, day, metric, n)
    SELECT r.account_id, NULL::date, d.metric, -count(*)
    FROM stats_old_rows r JOIN accounts a ON a.id = r.account_id
    CROSS JOIN LATERAL (VALUES
      ('contacts.total'), ('contacts.optin_chat.' || r.optin_chat), ('contacts.optin_email.' || r.optin_email)
    ) AS d(metric)
    GROUP BY 1, 2, 3;
  ELSE
    INSERT INTO stats_deltas (account_id, day, metric, n)
    SELECT n.account_id, NULL::date, d.metric, sum(d.n)
    FROM stats_new_rows n JOIN stats_old_rows o ON o.account_id = n.account_id AND o.id = n.id
    CROSS JOIN LATERAL (VALUES
      ('contacts.optin_chat.' || o.optin_chat, -1), ('contacts.optin_chat.' || n.optin_chat, 1),
      ('contacts.optin_email.' || o.optin_email, -1), ('contacts.optin_email.' || n.optin_email, 1)
    ) AS d(metric, n)
    WHERE (n.optin_chat <> o.optin_chat OR n.optin_email <> o.optin_email)
      AND EXISTS (SELECT 1 FROM accounts a WHERE a.id = n.account_id)
    GROUP BY 1, 2, 3
    HAVING sum(d.n) <> 0;
  END IF;
  RETURN NULL;
END
$$;
--> statement-breakpoint
-- Opt-ins confirmed and opt-outs per day and channel, from the consent records (every opt-in change writes one).
CREATE OR REPLACE FUNCTION "herold_stats_consent"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO stats_deltas (account_id, day, metric, n)
  SELECT r.account_id, (r.recorded_at AT TIME ZONE a.timezone)::date,
    CASE WHEN r.to_state = 'confirmed' THEN 'optins.confirmed.' ELSE 'optouts.' END || r.channel, count(*)
  FROM stats_new_rows r JOIN accounts a ON a.id = r.account_id
  WHERE r.to_state IN ('confirmed', 'opted_out')
  GROUP BY 1, 2, 3;
  RETURN NULL;
END
$$;
--> statement-breakpoint
DROP TRIGGER IF EXISTS "messages_stats" ON "messages";
--> statement-breakpoint
CREATE TRIGGER "messages_stats" AFTER INSERT ON "messages" REFERENCING NEW TABLE AS stats_new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION "herold_stats_messages"();
--> statement-breakpoint
DROP TRIGGER IF EXISTS "template_sends_stats_insert" ON "template_sends";
--> statement-breakpoint
CREATE TRIGGER "template_sends_stats_insert" AFTER INSERT ON "template_sends" REFERENCING NEW TABLE AS stats_new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION "herold_stats_sends"();
--> statement-breakpoint
DROP TRIGGER IF EXISTS "template_sends_stats_update" ON "template_sends";
--> statement-breakpoint
CREATE TRIGGER "template_sends_stats_update" AFTER UPDATE ON "template_sends"
  REFERENCING OLD TABLE AS stats_old_rows NEW TABLE AS stats_new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION "herold_stats_sends"();
--> statement-breakpoint
DROP TRIGGER IF EXISTS "contacts_stats_insert" ON "contacts";
--> statement-breakpoint
CREATE TRIGGER "contacts_stats_insert" AFTER INSERT ON "contacts" REFERENCING NEW TABLE AS stats_new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION "herold_stats_contacts"();
--> statement-breakpoint
DROP TRIGGER IF EXISTS "contacts_stats_update" ON "contacts";
--> statement-breakpoint
CREATE TRIGGER "contacts_stats_update" AFTER UPDATE ON "contacts"
  REFERENCING OLD TABLE AS stats_old_rows NEW TABLE AS stats_new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION "herold_stats_contacts"();
--> statement-breakpoint
DROP TRIGGER IF EXISTS "contacts_stats_delete" ON "contacts";
--> statement-breakpoint
CREATE TRIGGER "contacts_stats_delete" AFTER DELETE ON "contacts" REFERENCING OLD TABLE AS stats_old_rows
  FOR EACH STATEMENT EXECUTE FUNCTION "herold_stats_contacts"();
--> statement-breakpoint
DROP TRIGGER IF EXISTS "consent_records_stats" ON "consent_records";
--> statement-breakpoint
CREATE TRIGGER "consent_records_stats" AFTER INSERT ON "consent_records" REFERENCING NEW TABLE AS stats_new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION "herold_stats_consent"();
--> statement-breakpoint
DROP TRIGGER IF EXISTS "link_clicks_stats" ON "link_clicks";
--> statement-breakpoint
CREATE TRIGGER "link_clicks_stats" AFTER INSERT ON "link_clicks" REFERENCING NEW TABLE AS stats_new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION "herold_stats_count_rows"('links.clicks', 'clicked_at');
--> statement-breakpoint
DROP TRIGGER IF EXISTS "automation_runs_stats" ON "automation_runs";
--> statement-breakpoint
CREATE TRIGGER "automation_runs_stats" AFTER INSERT ON "automation_runs" REFERENCING NEW TABLE AS stats_new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION "herold_stats_count_rows"('runs.automation', 'created_at');
--> statement-breakpoint
-- What exists before the counters: counted once, here.
INSERT INTO stats_daily (account_id, day, metric, n)
SELECT account_id, day, metric, sum(n) FROM (
  SELECT c.account_id, (c.created_at AT TIME ZONE a.timezone)::date AS day, 'contacts.new' AS metric, count(*) AS n
    FROM contacts c JOIN accounts a ON a.id = c.account_id GROUP BY 1, 2
  UNION ALL
  SELECT m.account_id, (m.created_at AT TIME ZONE a.timezone)::date,
      CASE WHEN m.direction = 'inbound' THEN 'messages.in' ELSE 'messages.out' END, count(*)
    FROM messages m JOIN accounts a ON a.id = m.account_id GROUP BY 1, 2, 3
  UNION ALL
  SELECT m.account_id, (m.created_at AT TIME ZONE a.timezone)::date, 'ai.replies', count(*)
    FROM messages m JOIN accounts a ON a.id = m.account_id WHERE m.ai AND m.direction = 'outbound' GROUP BY 1, 2
  UNION ALL
  SELECT s.account_id, (s.updated_at AT TIME ZONE a.timezone)::date,
      CASE WHEN s.origin = 'newsletter' THEN 'sends.newsletter.' ELSE 'sends.template.' END || s.status, count(*)
    FROM template_sends s JOIN accounts a ON a.id = s.account_id WHERE s.status <> 'sending' GROUP BY 1, 2, 3
  UNION ALL
  SELECT r.account_id, (r.recorded_at AT TIME ZONE a.timezone)::date,
      CASE WHEN r.to_state = 'confirmed' THEN 'optins.confirmed.' ELSE 'optouts.' END || r.channel, count(*)
    FROM consent_records r JOIN accounts a ON a.id = r.account_id
    WHERE r.to_state IN ('confirmed', 'opted_out') GROUP BY 1, 2, 3
  UNION ALL
  SELECT l.account_id, (l.clicked_at AT TIME ZONE a.timezone)::date, 'links.clicks', count(*)
    FROM link_clicks l JOIN accounts a ON a.id = l.account_id GROUP BY 1, 2
  UNION ALL
  SELECT r.account_id, (r.created_at AT TIME ZONE a.timezone)::date, 'runs.automation', count(*)
    FROM automation_runs r JOIN accounts a ON a.id = r.account_id GROUP BY 1, 2
) existing
GROUP BY 1, 2, 3
ON CONFLICT (account_id, day, metric) DO UPDATE SET n = stats_daily.n + EXCLUDED.n;
--> statement-breakpoint
INSERT INTO stats_totals (account_id, metric, n)
SELECT account_id, metric, sum(n) FROM (
  SELECT account_id, 'contacts.total' AS metric, count(*) AS n FROM contacts GROUP BY 1
  UNION ALL
  SELECT account_id, 'contacts.optin_chat.' || optin_chat, count(*) FROM contacts GROUP BY 1, 2
  UNION ALL
  SELECT account_id, 'contacts.optin_email.' || optin_email, count(*) FROM contacts GROUP BY 1, 2
) existing
GROUP BY 1, 2
ON CONFLICT (account_id, metric) DO UPDATE SET n = stats_totals.n + EXCLUDED.n;
