-- The read of a claim's webhook deliveries (loadDeliveries of src/modules/webhooks/webhooks.repository.ts) as a
-- function with a cached generic plan, returning only the columns an attempt needs: built by the query builder and
-- planned anew on every call, and returning the three rows whole, it was the largest part of a delivery's cost in
-- the process besides the HTTP request itself (issue 36, "webhook deliveries at the pace of their parts").
CREATE OR REPLACE FUNCTION herold_load_webhook_deliveries(p_accounts uuid[], p_ids uuid[])
RETURNS TABLE (account_id uuid, id uuid, subscription_id uuid, event_id uuid, event_name text, state text,
  attempts int, subscription_status text, url text, secret_sealed text, event_created_at timestamptz,
  event_data jsonb)
LANGUAGE plpgsql
SET plan_cache_mode = force_generic_plan
AS $$
BEGIN
  RETURN QUERY
  SELECT d.account_id, d.id, d.subscription_id, d.event_id, d.event_name, d.state, d.attempts, s.status, s.url,
    s.secret_sealed, e.created_at, e.data
  FROM webhook_deliveries d
  LEFT JOIN webhook_subscriptions s ON s.account_id = d.account_id AND s.id = d.subscription_id
  LEFT JOIN events e ON e.account_id = d.account_id AND e.id = d.event_id
  WHERE d.account_id = ANY(p_accounts) AND d.id = ANY(p_ids);
END
$$;
