-- The fair claim of 0054_fair_claims (herold_claim_fair; herold_claim_fair_locked of 0065 calls it) with a plan whose
-- cost depends neither on the depth of any key's queue nor on the table's statistics (docs/architecture.md, "Fair
-- claims"; issue 36). The statements are those of 0054; what changes is what their planner may choose (below).
CREATE OR REPLACE FUNCTION herold_claim_fair(p_queue text, p_limit int, p_per_key int, p_now timestamptz,
  p_until timestamptz, p_lane text, p_window_ms int, p_inflight_ms int)
RETURNS SETOF jobs
LANGUAGE plpgsql
-- Every ORDER BY ... LIMIT of the walks over keys and accounts and of the picks within them is answered in order by
-- its index (jobs_queued_key_idx, jobs_fair_idx); with statistics that make the queue look empty (none yet, or taken
-- before it filled) the planner found reading all the queue's jobs through jobs_ready_idx and sorting them just as
-- cheap. With sorts disabled it has no such choice; what is still sorted (the candidates) is sorted all the same, as
-- nothing else can order it. PostgreSQL before 18 prices a disabled step at 10^10, which
-- would have every call compiled by JIT (about 1.6 s here): JIT is off for the claim.
SET plan_cache_mode = force_generic_plan
SET enable_sort = off
SET enable_incremental_sort = off
SET jit = off
AS $$
DECLARE
  v_accounts uuid[];
  v_ids uuid[];
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
  -- The picked jobs by primary key, one probe each. Their state is compared with v_queued, a variable: in this
  -- function's generic plan it is a parameter, so no partial index on `state = 'queued'` can serve the statement and
  -- the plan is the primary key's probes (or a scan of a table too small to matter). With the literal, statistics
  -- that say the queue is empty (analyzed before it filled) made a partial index look empty, and the join read every
  -- queued job of the table through it to find the dozen picked.
  RETURN QUERY
  UPDATE jobs SET state = 'running', attempts = jobs.attempts + 1, lease_token = gen_random_uuid(),
    locked_until = p_until, updated_at = p_now
  FROM unnest(v_accounts, v_ids) AS p(account_id, id)
  WHERE jobs.account_id = p.account_id AND jobs.id = p.id AND jobs.state = v_queued
  RETURNING jobs.*;
END
$$;
