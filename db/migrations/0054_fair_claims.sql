-- Fair, paced and prioritized claims (docs/architecture.md, "Fair claims"). A job's priority: 0 for messages sent
-- one at a time (an integration's POST, a step, a consent message), 1 for bulk work (a newsletter's sends).
ALTER TABLE "jobs" ADD COLUMN IF NOT EXISTS "priority" smallint NOT NULL DEFAULT 0;
--> statement-breakpoint
-- The claim's walk over the accounts with queued unkeyed work and its pick within each account (by priority, then
-- due time) read this index in order: one probe per account, not a scan of a million queued sends.
CREATE INDEX IF NOT EXISTS "jobs_fair_idx" ON "jobs" ("queue", "account_id", "priority", "run_at", "id")
  WHERE state = 'queued' AND concurrency_key IS NULL;
--> statement-breakpoint
-- The pace of an account's lane (its chat number: messages per second), kept where every worker process sees it:
-- `tat` is the theoretical arrival time of the lane's next message (a generic cell rate algorithm), moved forward by
-- every claim that takes messages of the lane.
CREATE TABLE IF NOT EXISTS "job_paces" (
  "account_id" uuid NOT NULL REFERENCES "accounts"("id") ON DELETE CASCADE,
  "lane" text NOT NULL,
  "per_second" integer NOT NULL,
  "tat" timestamp with time zone NOT NULL DEFAULT '-infinity',
  CONSTRAINT "job_paces_pkey" PRIMARY KEY ("account_id", "lane")
);
--> statement-breakpoint
INSERT INTO "job_paces" ("account_id", "lane", "per_second")
SELECT "account_id", 'chat', CASE WHEN "coexistence" THEN 20 ELSE least(1000, greatest(1, "messages_per_second")) END
FROM "channel_connections" WHERE "channel" = 'chat' AND "status" = 'connected'
ON CONFLICT DO NOTHING;
--> statement-breakpoint
-- The claim of src/platform/jobs/jobs.ts (claimJobs). Candidates: keyed jobs as before (per key at most its free
-- slots), and per account with unkeyed queued work its due jobs by priority and due time (at most p_limit, and for a
-- paced lane at most what its pace allows within p_window_ms and at most p_inflight_ms of its pace in flight). They are taken in order of the account's jobs in
-- flight plus their place in the account's own order: the account with the fewest jobs running goes first, so one
-- account's backlog lengthens only its own wait. The pace of each lane that got jobs moves forward in the same
-- statement; claims of one queue are serialized (advisory lock on PostgreSQL, one connection on PGlite).
CREATE OR REPLACE FUNCTION herold_claim_fair(p_queue text, p_limit int, p_per_key int, p_now timestamptz,
  p_until timestamptz, p_lane text, p_window_ms int, p_inflight_ms int)
RETURNS SETOF jobs
LANGUAGE plpgsql
SET plan_cache_mode = force_generic_plan
AS $$
DECLARE
  v_accounts uuid[];
  v_ids uuid[];
BEGIN
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
    SELECT c.account_id, c.id, c.priority, c.run_at FROM keys k
    LEFT JOIN busy b ON b.concurrency_key = k.concurrency_key
    CROSS JOIN LATERAL (
      SELECT j.account_id, j.id, j.priority, j.run_at FROM jobs j
      WHERE j.queue = p_queue AND j.state = 'queued' AND j.concurrency_key = k.concurrency_key
        AND j.run_at <= p_now
      ORDER BY j.run_at, j.id
      LIMIT greatest(0, p_per_key - coalesce(b.n, 0))
    ) c
    WHERE k.concurrency_key IS NOT NULL
  ),
  accts AS (
    (SELECT j.account_id FROM jobs j
      WHERE j.queue = p_queue AND j.state = 'queued' AND j.concurrency_key IS NULL
      ORDER BY j.account_id LIMIT 1)
    UNION ALL
    SELECT (SELECT j.account_id FROM jobs j
             WHERE j.queue = p_queue AND j.state = 'queued' AND j.concurrency_key IS NULL
               AND j.account_id > a.account_id
             ORDER BY j.account_id LIMIT 1)
    FROM accts a WHERE a.account_id IS NOT NULL
  ),
  unkeyed AS (
    SELECT c.account_id, c.id, c.priority, c.run_at FROM accts a
    CROSS JOIN LATERAL (
      (SELECT j.account_id, j.id, j.priority, j.run_at FROM jobs j
        WHERE j.queue = p_queue AND j.state = 'queued' AND j.concurrency_key IS NULL
          AND j.account_id = a.account_id AND j.priority = 0 AND j.run_at <= p_now
        ORDER BY j.run_at, j.id LIMIT p_limit)
      UNION ALL
      (SELECT j.account_id, j.id, j.priority, j.run_at FROM jobs j
        WHERE j.queue = p_queue AND j.state = 'queued' AND j.concurrency_key IS NULL
          AND j.account_id = a.account_id AND j.priority = 1 AND j.run_at <= p_now
        ORDER BY j.run_at, j.id LIMIT p_limit)
      LIMIT p_limit
    ) c
    WHERE a.account_id IS NOT NULL
  ),
  candidates AS (
    SELECT * FROM keyed UNION ALL SELECT * FROM unkeyed
  ),
  inflight AS (
    SELECT j.account_id, count(*)::int AS n FROM jobs j
    WHERE j.queue = p_queue AND j.state = 'running'
    GROUP BY j.account_id
  ),
  paced AS (
    SELECT p.account_id, p.per_second, greatest(p.tat, p_now) AS tat FROM job_paces p
    WHERE p_lane IS NOT NULL AND p.lane = p_lane AND p.account_id IN (SELECT c.account_id FROM candidates c)
  ),
  ranked AS (
    SELECT c.account_id, c.id, c.priority, c.run_at,
      row_number() OVER (PARTITION BY c.account_id ORDER BY c.priority, c.run_at, c.id) AS rn,
      coalesce(i.n, 0) AS running,
      CASE WHEN pc.account_id IS NULL THEN NULL
        -- the window holds one message at least (a lane slower than one message a window)
        ELSE floor((greatest(p_window_ms, 1000.0 / pc.per_second) - extract(epoch FROM pc.tat - p_now) * 1000)
          * pc.per_second / 1000.0)
      END AS room,
      -- a busy lane is claimed in steps of a tenth of a second of its pace at least: claims of a message or two each
      -- would cost their round trips per message (an idle lane has its whole window)
      CASE WHEN pc.account_id IS NULL THEN 0 ELSE greatest(1, floor(pc.per_second / 10.0)) END AS step,
      -- a paced lane holds at most p_inflight_ms of its pace in flight: a lane at 1,000/s holds 200 of a worker's
      -- slots, not all of them, so a quiet account's message finds one
      CASE WHEN pc.account_id IS NULL THEN NULL ELSE greatest(1, floor(pc.per_second * p_inflight_ms / 1000.0)) END
        AS cap
    FROM candidates c
    LEFT JOIN inflight i ON i.account_id = c.account_id
    LEFT JOIN paced pc ON pc.account_id = c.account_id
  ),
  picked AS (
    SELECT r.account_id, r.id FROM ranked r
    WHERE r.room IS NULL OR (r.rn <= r.room AND r.room >= r.step AND r.running + r.rn <= r.cap)
    ORDER BY r.running + r.rn, r.priority, r.run_at, r.id
    LIMIT p_limit
  )
  SELECT array_agg(p.account_id), array_agg(p.id) INTO v_accounts, v_ids FROM picked p;
  IF v_ids IS NULL THEN
    RETURN;
  END IF;
  -- the pace of each lane that got jobs moves forward by what it got
  IF p_lane IS NOT NULL THEN
    UPDATE job_paces p
    SET tat = greatest(p.tat, p_now) + make_interval(secs => s.n::float8 / p.per_second)
    FROM (SELECT a.account_id, count(*) AS n FROM unnest(v_accounts) AS a(account_id) GROUP BY a.account_id) s
    WHERE p.lane = p_lane AND p.account_id = s.account_id;
  END IF;
  -- the picked jobs by key from an array (a generic plan would join a CTE of unknown size by scanning the table)
  RETURN QUERY
  UPDATE jobs SET state = 'running', attempts = jobs.attempts + 1, lease_token = gen_random_uuid(),
    locked_until = p_until, updated_at = p_now
  FROM unnest(v_accounts, v_ids) AS p(account_id, id)
  WHERE jobs.account_id = p.account_id AND jobs.id = p.id AND jobs.state = 'queued'
  RETURNING jobs.*;
END
$$;
