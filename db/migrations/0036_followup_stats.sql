-- Statistics count follow-up runs (an enrollment of a contact in a sequence) on the day they start, as automation
-- runs are counted (0029).
DROP TRIGGER IF EXISTS "followup_enrollments_stats" ON "followup_enrollments";
--> statement-breakpoint
CREATE TRIGGER "followup_enrollments_stats" AFTER INSERT ON "followup_enrollments"
  REFERENCING NEW TABLE AS stats_new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION "herold_stats_count_rows"('runs.followup', 'enrolled_at');
--> statement-breakpoint
-- What exists before the counter: counted once, here.
INSERT INTO stats_daily (account_id, day, metric, n)
SELECT e.account_id, (e.enrolled_at AT TIME ZONE a.timezone)::date, 'runs.followup', count(*)
  FROM followup_enrollments e JOIN accounts a ON a.id = e.account_id GROUP BY 1, 2
ON CONFLICT (account_id, day, metric) DO UPDATE SET n = stats_daily.n + excluded.n;
