-- Paced slots (issue 50, "No second over the pace"; docs/architecture.md, "Pacing"). A claim of a paced lane no longer
-- hands its worker a window of messages to send at once: every claimed job gets its own slot, `slot_at`, the moment
-- its message may leave, one interval of the lane apart (1 / per_second, widened by p_guard), and the worker sends no
-- message before its slot. The lane's `tat` is the slot after the last one booked; an idle lane starts at now (less
-- the operator's burst, p_burst_ms: the bucket's size in time of the pace, 0 by default). Messages sent outside the
-- claim (free text, consent messages, AI replies) book their slot on the same row with one UPDATE (channels pacer.ts).
-- The claim books slots at most p_window_ms ahead of now and holds at most p_inflight_ms of the lane's pace running,
-- booked slots waiting included.
ALTER TABLE "jobs" ADD COLUMN IF NOT EXISTS "slot_at" timestamptz;
--> statement-breakpoint
DROP FUNCTION IF EXISTS herold_claim_fair_locked(text, int, int, timestamptz, timestamptz, text, int, int);
--> statement-breakpoint
DROP FUNCTION IF EXISTS herold_claim_fair(text, int, int, timestamptz, timestamptz, text, int, int);
--> statement-breakpoint
CREATE OR REPLACE FUNCTION herold_claim_fair(p_queue text, p_limit int, p_per_key int, p_now timestamptz,
  p_until timestamptz, p_lane text, p_window_ms int, p_inflight_ms int, p_burst_ms int, p_guard float8)
RETURNS SETOF jobs
LANGUAGE plpgsql
-- See 0069_claim_by_key: every ORDER BY ... LIMIT is answered in order by its index; sorts disabled, JIT off.
SET plan_cache_mode = force_generic_plan
SET enable_sort = off
SET enable_incremental_sort = off
SET jit = off
AS $$
DECLARE
  v_accounts uuid[];
  v_ids uuid[];
  v_ranks int[];
  v_queued text := 'queued';
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
    -- the lane's next slot: its tat, or for an idle lane now less the burst
    SELECT p.account_id, p.per_second,
      greatest(p.tat, p_now - make_interval(secs => p_burst_ms / 1000.0)) AS tat FROM job_paces p
    WHERE p_lane IS NOT NULL AND p.lane = p_lane AND p.account_id IN (SELECT c.account_id FROM candidates c)
  ),
  ranked AS (
    SELECT c.account_id, c.id, c.priority, c.run_at,
      row_number() OVER (PARTITION BY c.account_id ORDER BY c.priority, c.run_at, c.id) AS rn,
      coalesce(i.n, 0) AS running,
      -- the slots from the lane's next one up to p_window_ms ahead of now (one at least: a lane slower than one
      -- message a window), each p_guard / per_second apart
      CASE WHEN pc.account_id IS NULL THEN NULL
        ELSE floor((greatest(p_window_ms, 1000.0 * p_guard / pc.per_second) - extract(epoch FROM pc.tat - p_now) * 1000)
          * pc.per_second / (1000.0 * p_guard))
      END AS room,
      -- a busy lane is claimed in steps of almost half its window at least (the slots of p_window_ms / 2 less one):
      -- claims of a message or two each would cost their round trips per message (an idle lane has its whole window).
      -- The runner claims again when a claim's last slot is less than half the window ahead (JobRunner #paceNext):
      -- one slot less than that is sure to have room then.
      CASE WHEN pc.account_id IS NULL THEN 0
        ELSE greatest(1, floor(pc.per_second * p_window_ms / (2000.0 * p_guard)) - 1) END AS step,
      -- a paced lane holds at most p_inflight_ms of its pace running, the jobs waiting for their slots included: a
      -- lane at 1,000/s holds 400 of the workers' slots, not all of them, so a quiet account's message finds one
      CASE WHEN pc.account_id IS NULL THEN NULL ELSE greatest(1, floor(pc.per_second * p_inflight_ms / 1000.0)) END
        AS cap
    FROM candidates c
    LEFT JOIN inflight i ON i.account_id = c.account_id
    LEFT JOIN paced pc ON pc.account_id = c.account_id
  ),
  picked AS (
    SELECT r.account_id, r.id, r.rn FROM ranked r
    WHERE r.room IS NULL OR (r.rn <= r.room AND r.room >= r.step AND r.running + r.rn <= r.cap)
    ORDER BY r.running + r.rn, r.priority, r.run_at, r.id
    LIMIT p_limit
  )
  SELECT array_agg(p.account_id), array_agg(p.id), array_agg(p.rn::int) INTO v_accounts, v_ids, v_ranks
  FROM picked p;
  IF v_ids IS NULL THEN
    RETURN;
  END IF;
  -- The picked jobs of an account are its first by (priority, due time): ranks 1..n (the order of `picked` keeps each
  -- account's ranks in sequence), so the interactive ones get the first slots. Each lane that got jobs moves its tat
  -- past their slots, and each job's slot is its rank's from the lane's next slot as this UPDATE finds it: read under
  -- the row's lock, so a slot booked outside the claim meanwhile (pacer.ts) is never booked twice.
  --
  -- The picked jobs by primary key, one probe each. Their state is compared with v_queued, a variable: in this
  -- function's generic plan it is a parameter, so no partial index on `state = 'queued'` can serve the statement and
  -- the plan is the primary key's probes (or a scan of a table too small to matter). With the literal, statistics
  -- that say the queue is empty (analyzed before it filled) made a partial index look empty, and the join read every
  -- queued job of the table through it to find the dozen picked.
  IF p_lane IS NULL THEN
    -- an unpaced queue: the picked jobs in the order they were picked (a join to the lanes reordered them)
    RETURN QUERY
    UPDATE jobs SET state = 'running', attempts = jobs.attempts + 1, lease_token = gen_random_uuid(),
      locked_until = p_until, updated_at = p_now
    FROM unnest(v_accounts, v_ids) AS p(account_id, id)
    WHERE jobs.account_id = p.account_id AND jobs.id = p.id AND jobs.state = v_queued
    RETURNING jobs.*;
    RETURN;
  END IF;
  RETURN QUERY
  WITH got AS (
    SELECT a.account_id, count(*)::int AS n FROM unnest(v_accounts) AS a(account_id) GROUP BY a.account_id
  ),
  lanes AS (
    UPDATE job_paces p
    SET tat = greatest(p.tat, p_now - make_interval(secs => p_burst_ms / 1000.0))
      + make_interval(secs => got.n * p_guard / p.per_second)
    FROM got
    WHERE p_lane IS NOT NULL AND p.lane = p_lane AND p.account_id = got.account_id
    RETURNING p.account_id, p.tat - make_interval(secs => got.n * p_guard / p.per_second) AS first_slot,
      p_guard / p.per_second AS interval_s
  )
  UPDATE jobs SET state = 'running', attempts = jobs.attempts + 1, lease_token = gen_random_uuid(),
    locked_until = p_until, updated_at = p_now,
    slot_at = l.first_slot + make_interval(secs => (p.rn - 1) * l.interval_s)
  FROM unnest(v_accounts, v_ids, v_ranks) AS p(account_id, id, rn)
  LEFT JOIN lanes l ON l.account_id = p.account_id
  WHERE jobs.account_id = p.account_id AND jobs.id = p.id AND jobs.state = v_queued
  RETURNING jobs.*;
END
$$;
--> statement-breakpoint
CREATE OR REPLACE FUNCTION herold_claim_fair_locked(p_queue text, p_limit int, p_per_key int, p_now timestamptz,
  p_until timestamptz, p_lane text, p_window_ms int, p_inflight_ms int, p_burst_ms int, p_guard float8)
RETURNS SETOF jobs
LANGUAGE plpgsql
AS $$
BEGIN
  PERFORM pg_advisory_xact_lock(727002, hashtext(p_queue));
  RETURN QUERY SELECT * FROM herold_claim_fair(p_queue, p_limit, p_per_key, p_now, p_until, p_lane, p_window_ms,
    p_inflight_ms, p_burst_ms, p_guard);
END
$$;
