CREATE INDEX "jobs_queued_key_idx" ON "jobs" USING btree ("queue","concurrency_key","run_at","id") WHERE state = 'queued';--> statement-breakpoint
-- The claim of src/platform/jobs/jobs.ts as a function with a cached generic plan: planning the statement anew
-- on every call cost several times its execution on the embedded PGlite, and a burst claims many times a second.
CREATE OR REPLACE FUNCTION herold_claim_jobs(p_queue text, p_limit int, p_per_key int, p_now timestamptz, p_until timestamptz)
RETURNS SETOF jobs
LANGUAGE plpgsql
SET plan_cache_mode = force_generic_plan
AS $$
BEGIN
  RETURN QUERY
  WITH RECURSIVE keys AS (
    (SELECT j.concurrency_key FROM jobs j
      WHERE j.queue = p_queue AND j.state = 'queued' AND j.concurrency_key IS NOT NULL
      ORDER BY j.concurrency_key LIMIT 1)
    UNION ALL
    SELECT (SELECT j.concurrency_key FROM jobs j
             WHERE j.queue = p_queue AND j.state = 'queued' AND j.concurrency_key > k.concurrency_key
             ORDER BY j.concurrency_key LIMIT 1)
    FROM keys k WHERE k.concurrency_key IS NOT NULL
  ),
  busy AS (
    SELECT j.concurrency_key, count(*)::int AS n FROM jobs j
    WHERE j.queue = p_queue AND j.state = 'running' AND j.concurrency_key IS NOT NULL
    GROUP BY j.concurrency_key
  ),
  keyed AS (
    SELECT c.account_id, c.id, c.run_at FROM keys k
    LEFT JOIN busy b ON b.concurrency_key = k.concurrency_key
    CROSS JOIN LATERAL (
      SELECT j.account_id, j.id, j.run_at FROM jobs j
      WHERE j.queue = p_queue AND j.state = 'queued' AND j.concurrency_key = k.concurrency_key
        AND j.run_at <= p_now
      ORDER BY j.run_at, j.id
      LIMIT greatest(0, p_per_key - coalesce(b.n, 0))
    ) c
    WHERE k.concurrency_key IS NOT NULL
  ),
  unkeyed AS (
    SELECT j.account_id, j.id, j.run_at FROM jobs j
    WHERE j.queue = p_queue AND j.state = 'queued' AND j.concurrency_key IS NULL AND j.run_at <= p_now
    ORDER BY j.concurrency_key, j.run_at, j.id
    LIMIT p_limit
  ),
  picked AS (
    SELECT d.account_id, d.id FROM (SELECT * FROM keyed UNION ALL SELECT * FROM unkeyed) d
    ORDER BY d.run_at, d.id
    LIMIT p_limit
  )
  UPDATE jobs SET state = 'running', attempts = jobs.attempts + 1, lease_token = gen_random_uuid(),
    locked_until = p_until, updated_at = p_now
  FROM picked WHERE jobs.account_id = picked.account_id AND jobs.id = picked.id AND jobs.state = 'queued'
  RETURNING jobs.*;
END
$$;
--> statement-breakpoint
-- recordSuccesses of src/modules/webhooks/webhooks.repository.ts, with a cached plan for the same reason: one
-- call records a batch of successful webhook attempts (attempt rows, deliveries succeeded, failure streaks reset,
-- jobs finished if still held) and returns the ids of the jobs it finished.
CREATE OR REPLACE FUNCTION herold_record_webhook_successes(p_input jsonb, p_now timestamptz)
RETURNS SETOF uuid
LANGUAGE plpgsql
SET plan_cache_mode = force_generic_plan
AS $$
BEGIN
  RETURN QUERY
  WITH input AS (
    SELECT * FROM jsonb_to_recordset(p_input) AS r(account_id uuid, job_id uuid, lease_token uuid,
      attempt_id uuid, delivery_id uuid, subscription_id uuid, event_id uuid, event_name text, attempt int,
      attempted_at timestamptz, duration_ms int, status_code int)
  ),
  done AS (
    DELETE FROM jobs j USING input i
    WHERE j.account_id = i.account_id AND j.id = i.job_id AND j.lease_token = i.lease_token AND j.state = 'running'
    RETURNING j.account_id, j.id
  ),
  held AS (
    SELECT i.* FROM input i
    JOIN done d ON d.account_id = i.account_id AND d.id = i.job_id
    JOIN webhook_subscriptions s ON s.account_id = i.account_id AND s.id = i.subscription_id
  ),
  attempts AS (
    INSERT INTO webhook_delivery_attempts (account_id, id, subscription_id, delivery_id, event_id, event_name,
      attempt, attempted_at, duration_ms, status_code, error, succeeded, delivery_state, next_attempt_at)
    SELECT h.account_id, h.attempt_id, h.subscription_id, h.delivery_id, h.event_id, h.event_name, h.attempt,
      h.attempted_at, h.duration_ms, h.status_code, NULL, true, 'succeeded', NULL
    FROM held h
  ),
  deliveries AS (
    UPDATE webhook_deliveries w SET attempts = h.attempt, state = 'succeeded', next_attempt_at = NULL,
      finished_at = p_now
    FROM held h WHERE w.account_id = h.account_id AND w.id = h.delivery_id
  ),
  healthy AS (
    UPDATE webhook_subscriptions s SET consecutive_failures = 0
    FROM (SELECT DISTINCT h.account_id, h.subscription_id FROM held h) h
    WHERE s.account_id = h.account_id AND s.id = h.subscription_id AND s.consecutive_failures <> 0
  )
  SELECT d.id FROM done d;
END
$$;
