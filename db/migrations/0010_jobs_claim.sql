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
