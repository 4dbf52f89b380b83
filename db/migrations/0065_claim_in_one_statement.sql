-- claimJobs of src/platform/jobs/jobs.ts on PostgreSQL when no lease needs reaping: the queue's advisory lock and the
-- fair claim in one statement (its own transaction) instead of BEGIN, the lock, the claim and COMMIT. Those four round
-- trips were 60 % of a webhook delivery's statements in a backlog drain (0.32 of 0.53). The claim inside takes its
-- snapshot after the lock is held (each statement of a volatile function takes its own), as it did in the transaction.
CREATE OR REPLACE FUNCTION herold_claim_fair_locked(p_queue text, p_limit int, p_per_key int, p_now timestamptz,
  p_until timestamptz, p_lane text, p_window_ms int, p_inflight_ms int)
RETURNS SETOF jobs
LANGUAGE plpgsql
AS $$
BEGIN
  PERFORM pg_advisory_xact_lock(727002, hashtext(p_queue));
  RETURN QUERY SELECT * FROM herold_claim_fair(p_queue, p_limit, p_per_key, p_now, p_until, p_lane, p_window_ms,
    p_inflight_ms);
END
$$;
